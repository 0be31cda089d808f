/* tensorboard.h: RUN/events.out.tfevents.vrl, the scalars of metrics.jsonl as a TensorBoard
 * events file, so `tensorboard --logdir RUN` (or a folder of run folders) shows a run live.
 * The file is TensorBoard's record format: per record the payload length (uint64 little
 * endian), the masked CRC-32C of those 8 bytes, a serialized Event protobuf
 * (tb_event.proto), the masked CRC-32C of the payload. One file per run folder; a resumed
 * run keeps the records up to its checkpoint's step and appends, so no step repeats. */
#ifndef VRL_TENSORBOARD_H
#define VRL_TENSORBOARD_H

typedef struct {
    int is_open;             /* 0 (a zeroed TbWriter too): nothing is written or closed */
    int fd;                  /* the events file, appended record by record */
    char path[4200];
} TbWriter;

/* Open RUN/events.out.tfevents.vrl like metrics_open opens metrics.jsonl: keep_upto_step >= 0
 * (resume) drops the records of later steps and a record cut short; a fresh run
 * (keep_upto_step < 0) moves an existing file aside to RUN/tensorboard.restarted (a name
 * TensorBoard does not read). 0, or -1 with vrl_error. */
int tb_open(TbWriter *w, const char *run_dir, long keep_upto_step);
void tb_close(TbWriter *w);

/* One Event at `step` holding n scalars tags[i] = values[i] (float32, as TensorBoard keeps
 * them), written with one write(2). -1 with vrl_error when it could not be written. */
int tb_write_scalars(TbWriter *w, long step, int n, const char *const *tags, const double *values);

#endif
