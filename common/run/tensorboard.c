/* tensorboard.c: TensorBoard's events file (tensorboard.h). The Event protobuf is encoded by
 * protobuf-c (Debian libprotobuf-c) from tb_event.proto, and CRC-32C is ISA-L's
 * crc32_iscsi (Debian libisal): this file only frames the records. */
#include "common/run/tensorboard.h"

#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/run/run_paths.h"
#include "tb_event.pb-c.h" /* generated from common/run/tb_event.proto */

enum { TB_HEADER = 12, TB_FOOTER = 4, TB_MAX_SCALARS = 16 };

/* CRC-32C (Castagnoli): ISA-L's crc32_iscsi leaves the initial and final inversion to the
 * caller. The mask is TensorBoard's (from TFRecord): rotate right 15, add a constant, so a
 * CRC stored inside CRC'd data does not cancel out. */
static unsigned tb_masked_crc(const void *data, unsigned long n) {
    const uint32_t crc = ~crc32_iscsi((unsigned char *)data, (int)n, 0xFFFFFFFFu);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_u32(unsigned char *p, uint32_t x) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(x >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Frame `ev` as one record and write it with one write(2): a crash leaves at most one
 * record cut short at the end, which the next tb_open drops. */
static int write_event(TbWriter *w, const Tensorboard__Event *ev) {
    const size_t n = tensorboard__event__get_packed_size(ev);
    unsigned char *rec = malloc(TB_HEADER + n + TB_FOOTER);
    if (!rec) return vrl_error("%s: out of memory", w->path);
    for (int i = 0; i < 8; i++) rec[i] = (unsigned char)((uint64_t)n >> (8 * i));
    put_u32(rec + 8, tb_masked_crc(rec, 8));
    tensorboard__event__pack(ev, rec + TB_HEADER);
    put_u32(rec + TB_HEADER + n, tb_masked_crc(rec + TB_HEADER, n));
    const size_t total = TB_HEADER + n + TB_FOOTER;
    const ssize_t got = write(w->fd, rec, total);
    const int e = errno;
    free(rec);
    if (got != (ssize_t)total)
        return vrl_error("%s: cannot write (%s); the file is repaired from the checkpoint on --resume", w->path,
                         got < 0 ? strerror(e) : "disk full?");
    return 0;
}

/* Keep the whole records (both CRCs right, the Event parses) whose step is <= keep, up to the
 * first damaged one; rewrite the file atomically. */
static int truncate_after(const char *path, long keep) {
    void *data;
    size_t n;
    if (!file_exists(path)) return 0;
    if (read_file_all(path, &data, &n) < 0) return -1;
    unsigned char *src = data, *out = malloc(n + 1);
    size_t o = 0;
    if (!out) {
        free(data);
        return vrl_error("%s: out of memory", path);
    }
    for (size_t at = 0; n - at >= TB_HEADER + TB_FOOTER;) {
        const uint64_t len = get_u64(src + at);
        if (get_u32(src + at + 8) != tb_masked_crc(src + at, 8) || len > n - at - TB_HEADER - TB_FOOTER) break;
        const unsigned char *payload = src + at + TB_HEADER;
        if (get_u32(payload + len) != tb_masked_crc(payload, (unsigned long)len)) break;
        Tensorboard__Event *ev = tensorboard__event__unpack(NULL, (size_t)len, payload);
        if (!ev) break;
        const int keep_it = ev->step <= keep;
        tensorboard__event__free_unpacked(ev, NULL);
        const size_t whole = TB_HEADER + (size_t)len + TB_FOOTER;
        if (keep_it) {
            memcpy(out + o, src + at, whole);
            o += whole;
        }
        at += whole;
    }
    const int rc = write_file_atomic(path, out, o);
    free(out);
    free(data);
    return rc;
}

int tb_open(TbWriter *w, const char *run_dir, long keep_upto_step) {
    memset(w, 0, sizeof *w);
    if (run_path(w->path, sizeof w->path, run_dir, RUN_TB_EVENTS) < 0) return -1;
    if (keep_upto_step >= 0 && truncate_after(w->path, keep_upto_step) < 0) return -1;
    if (keep_upto_step < 0 && file_exists(w->path)) {
        /* TensorBoard reads every file whose name holds "tfevents": the old one must lose it */
        char old[sizeof w->path];
        if (run_path(old, sizeof old, run_dir, RUN_TB_RESTARTED) < 0) return -1;
        if (rename(w->path, old) != 0) return vrl_error("%s: cannot move aside to %s", w->path, old);
    }
    /* O_NOFOLLOW: a link in a received folder is refused, never appended through */
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        if (errno == ELOOP) return vrl_error("%s: is a symbolic link; refusing to write through it (remove it)", w->path);
        return vrl_error("%s: cannot open for writing: %s", w->path, strerror(errno));
    }
    w->is_open = 1;
    if (lseek(w->fd, 0, SEEK_END) == 0) { /* a new file starts with its format's version */
        Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
        ev.wall_time = wall_time();
        ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
        ev.file_version = "brain.Event:2";
        if (write_event(w, &ev) < 0) return -1;
    }
    return 0;
}

void tb_close(TbWriter *w) {
    if (w->is_open) close(w->fd);
    w->is_open = 0;
}

int tb_write_scalars(TbWriter *w, long step, int n, const char *const *tags, const double *values) {
    if (!w->is_open) return 0;
    if (n < 1 || n > TB_MAX_SCALARS) return vrl_error("%s: %d scalars in one event (1..%d)", w->path, n, TB_MAX_SCALARS);
    Tensorboard__SummaryValue vals[TB_MAX_SCALARS], *ptrs[TB_MAX_SCALARS];
    for (int i = 0; i < n; i++) {
        tensorboard__summary_value__init(&vals[i]);
        vals[i].tag = (char *)tags[i];
        vals[i].value_case = TENSORBOARD__SUMMARY_VALUE__VALUE_SIMPLE_VALUE;
        vals[i].simple_value = (float)values[i];
        ptrs[i] = &vals[i];
    }
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    sum.n_value = (size_t)n;
    sum.value = ptrs;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    return write_event(w, &ev);
}
