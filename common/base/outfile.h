/* outfile.h: a streamed output file that appears atomically. Bytes go to
 * `path.vrl.tmp.PID`; commit fsyncs, renames over `path` and fsyncs the directory; abort
 * (or any failure) removes the temporary file, so readers never see half a file.
 * outfile_open is for names vrl chose: a device, FIFO, folder, block device or socket there
 * is refused (fsutil's output_target). outfile_open_named is for a path the user named
 * (`--out`): a character device or FIFO there, or a link to one (/dev/stdout), is written
 * in place, never renamed over; any other link is refused (output_target_named).
 * (fsutil's write_file_atomic does the same for data already in memory.) */
#ifndef VRL_OUTFILE_H
#define VRL_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char path[4096];
    char tmp[4224];
    FILE *f;                   /* NULL when closed */
    int direct;                /* 1: a character device or FIFO stood at path, written in place */
} OutFile;

int outfile_open(OutFile *o, const char *path);
int outfile_open_named(OutFile *o, const char *path);
int outfile_write(OutFile *o, const void *data, size_t n);
int outfile_commit(OutFile *o);
void outfile_abort(OutFile *o);

#endif
