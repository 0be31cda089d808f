/* outfile.c: streamed atomic output (temp file, fsync, rename, fsync directory). */
#include "common/base/outfile.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

static int open_as(OutFile *o, const char *path, int named) {
    memset(o, 0, sizeof *o);
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path) return vrl_error("%s: path too long", path);
    const int target = named ? output_target_named(path) : output_target(path);
    if (target < 0) return -1;
    o->direct = target == OUTPUT_DIRECT; /* /dev/null, a FIFO: written as they are, never renamed over */
    int fd = o->direct ? open_output_direct(path) : create_temp_beside(path, o->tmp, sizeof o->tmp);
    if (fd < 0) return -1;
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        if (!o->direct) unlink(o->tmp);
        return vrl_error("%s: cannot create: %s", o->direct ? path : o->tmp, strerror(e));
    }
    return 0;
}

int outfile_open(OutFile *o, const char *path) { return open_as(o, path, 0); }

int outfile_open_named(OutFile *o, const char *path) { return open_as(o, path, 1); }

int outfile_write(OutFile *o, const void *data, size_t n) {
    if (n && fwrite(data, 1, n, o->f) != n) {
        int e = errno;
        outfile_abort(o);
        return vrl_error("%s: write failed: %s", o->path, strerror(e));
    }
    return 0;
}

int outfile_commit(OutFile *o) {
    /* ferror: an fprintf into o->f that failed earlier; a device or FIFO is not fsync'd */
    if (fflush(o->f) != 0 || ferror(o->f) || (!o->direct && fsync(fileno(o->f)) != 0)) {
        int e = errno ? errno : EIO;
        outfile_abort(o);
        return vrl_error("%s: write failed: %s", o->path, strerror(e));
    }
    if (fclose(o->f) != 0) {
        o->f = NULL;
        if (!o->direct) unlink(o->tmp);
        return vrl_error("%s: write failed: %s", o->path, strerror(errno));
    }
    o->f = NULL;
    if (o->direct) return 0;
    if (rename(o->tmp, o->path) != 0) {
        int e = errno;
        unlink(o->tmp);
        return vrl_error("%s: rename failed: %s", o->path, strerror(e));
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", o->path);
    int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {                    /* make the rename durable; best effort */
        fsync(fd);
        close(fd);
    }
    return 0;
}

void outfile_abort(OutFile *o) {
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
        if (!o->direct) unlink(o->tmp);
    }
}
