/* data_stage.h: a data command's output folder written as checkpoints are: everything goes
 * into a stage folder inside OUT (OUT/.vrl.tmp.PID), and only once all of it is written does
 * each entry replace OUT's by one rename (RENAME_EXCHANGE where the file system has it). A
 * failed run, or a rerun that fails partway, leaves OUT's previous result whole.
 *
 * OUT may be missing, empty, or hold only the names the command writes (`owned`: files, or
 * folders of plain files); anything else is someone's and refused with one line, so nothing
 * of theirs is replaced or removed. */
#ifndef VRL_DATA_STAGE_H
#define VRL_DATA_STAGE_H

#include <stddef.h>

typedef struct {
    char out[4096];     /* the folder the user named */
    char dir[4200];     /* OUT/.vrl.tmp.PID, where the command writes */
    int made_out;       /* OUT did not exist: removed again when the run fails */
    const char *const *owned; /* the entries the command writes, NULL-terminated */
} DataStage;

/* Check OUT, remove stage folders killed runs left, make OUT and the stage folder. */
int data_stage_open(DataStage *s, const char *out, const char *const *owned);
/* Move every owned entry of the stage into OUT (an owned entry of OUT the stage lacks goes
 * too: OUT then holds this run's result only), then remove the stage and the old entries. */
int data_stage_publish(DataStage *s);
/* After a failure: remove the stage (and OUT if this run made it); the error stays, with
 * "(OUT is as it was)" added. */
void data_stage_discard(DataStage *s);

#endif
