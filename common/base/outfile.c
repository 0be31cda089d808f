/* outfile.c: streamed atomic output (temp file, fsync, rename, fsync directory). */
#include "common/base/outfile.h"
#include "common/base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

int outfile_open(OutFile *o, const char *path) {
    memset(o, 0, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "wb");
    if (!o->f) return vrl_error("%s: cannot create: %s", o->tmp, strerror(errno));
    return 0;
}

int outfile_write(OutFile *o, const void *data, size_t n) {
    if (n && fwrite(data, 1, n, o->f) != n) {
        int e = errno;
        outfile_abort(o);
        return vrl_error("%s: write failed: %s", o->path, strerror(e));
    }
    return 0;
}

int outfile_commit(OutFile *o) {
    if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0) {
        int e = errno;
        outfile_abort(o);
        return vrl_error("%s: write failed: %s", o->path, strerror(e));
    }
    fclose(o->f);
    o->f = NULL;
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
        unlink(o->tmp);
    }
}
