/* fsutil.c: atomic writes and whole-file reads shared by every vrl writer.
 *
 * An atomic write goes to `path.vrl.tmp.PID` in the same directory (so rename() stays on
 * one file system), is fsync'd, renamed over `path`, and then the directory is fsync'd
 * so the rename itself survives a power loss. Any failure removes the temp file and
 * leaves the old `path` untouched. */
#include "common/base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fault.h"

/* write() may write less than asked (signals, pipes); loop until done. */
static int write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return vrl_error("%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fault_point("fsync directory") < 0 ? -1 : fsync(fd);
    /* Some file systems refuse fsync on directories (EINVAL); the rename is still done. */
    if (rc < 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        return vrl_error("%s: fsync failed: %s", dir, strerror(e));
    }
    close(fd);
    return 0;
}

/* fsync the directory holding `path` so the rename is durable. */
static int fsync_parent(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return fsync_dir(dir);
}

static const char *file_kind(mode_t m);

int output_target(const char *path) {
    struct stat st;
    if (lstat(path, &st) < 0) return errno == ENOENT ? OUTPUT_REPLACE : vrl_error("%s: cannot stat: %s", path, strerror(errno));
    /* a link is replaced, never followed; a plain file is replaced by rename */
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return OUTPUT_REPLACE;
    /* a device or FIFO at a name vrl chose (a run folder's eval.json) was planted: the user
     * named no such thing, so nothing is written into it */
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
        return vrl_error("%s: not a regular file (%s); vrl writes into a device or FIFO only where one is named "
                         "on the command line", path, file_kind(st.st_mode));
    return vrl_error("%s: not a regular file (%s); refusing to replace it", path, file_kind(st.st_mode));
}

int output_target_named(const char *path) {
    struct stat st;
    if (lstat(path, &st) < 0) return errno == ENOENT ? OUTPUT_REPLACE : vrl_error("%s: cannot stat: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) return OUTPUT_REPLACE;
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return OUTPUT_DIRECT;
    if (S_ISLNK(st.st_mode)) {
        /* a link is never replaced by a file: through it only to a device or FIFO (/dev/stdout) */
        struct stat to;
        if (stat(path, &to) == 0 && (S_ISCHR(to.st_mode) || S_ISFIFO(to.st_mode))) return OUTPUT_DIRECT;
        return vrl_error("%s: is a symbolic link; refusing to replace it or to write through it (name the file "
                         "itself, or remove the link)", path);
    }
    return vrl_error("%s: not a regular file (%s); refusing to replace it", path, file_kind(st.st_mode));
}

int open_output_direct(const char *path) {
    /* no O_CREAT, no O_TRUNC: the node is written as it stands, never replaced. O_NONBLOCK
     * first: a FIFO nobody reads fails at once (ENXIO) instead of blocking for ever. Only
     * named outputs come here, so a link (/dev/stdout) is followed to its device or FIFO. */
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENXIO)
        return vrl_error("%s: a FIFO that no process is reading; start the reader first", path);
    if (fd < 0) return vrl_error("%s: cannot open for writing: %s", path, strerror(errno));
    struct stat st;
    const int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) || flags < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        close(fd);
        return vrl_error("%s: changed while being opened", path);
    }
    return fd;
}

int create_temp_beside(const char *path, char *tmp, size_t n) {
    if (snprintf(tmp, n, "%s" VRL_TMP_INFIX "%ld", path, (long)getpid()) >= (int)n)
        return vrl_error("%s: path too long", path);
    /* a leftover (or planted link) of the same name goes; O_EXCL|O_NOFOLLOW then makes a new file
     * here or fails, never writing through a link into another folder */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return vrl_error("%s: cannot create: %s", tmp, strerror(errno));
    return fd;
}

int write_file_atomic_parts(const char *path, const void *const *parts, const size_t *sizes, int n_parts) {
    const int target = output_target(path);
    if (target < 0) return -1;
    char tmp[PATH_MAX + 32];
    int fd = create_temp_beside(path, tmp, sizeof tmp);
    if (fd < 0) return -1;
    for (int i = 0; i < n_parts; i++) {
        if (sizes[i] && (fault_point("write") < 0 || write_all(fd, parts[i], sizes[i]) < 0)) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return vrl_error("%s: write failed: %s", tmp, strerror(e));
        }
    }
    if (fault_point("fsync") < 0 || fsync(fd) < 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return vrl_error("%s: fsync failed: %s", tmp, strerror(e));
    }
    if (close(fd) < 0) {
        int e = errno;
        unlink(tmp);
        return vrl_error("%s: close failed: %s", tmp, strerror(e));
    }
    if (fault_point("rename") < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return vrl_error("%s: rename from %s failed: %s", path, tmp, strerror(e));
    }
    return fsync_parent(path);
}

int write_file_atomic(const char *path, const void *data, size_t n) {
    const void *parts[1] = {data};
    size_t sizes[1] = {n};
    return write_file_atomic_parts(path, parts, sizes, 1);
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

int open_regular(const char *path, uint64_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return vrl_error("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return vrl_error("%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return vrl_error("%s: not a regular file (%s)", path, file_kind(st.st_mode));
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return vrl_error("%s: cannot read: %s", path, strerror(e));
    }
    if (size) *size = (uint64_t)st.st_size;
    return fd;
}

FILE *fopen_regular(const char *path) {
    const int fd = open_regular(path, NULL);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        vrl_error("%s: cannot open: %s", path, strerror(errno));
    }
    return f;
}

int read_file_all(const char *path, void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    uint64_t file_size;
    int fd = open_regular(path, &file_size);
    if (fd < 0) return -1;
    size_t size = (size_t)file_size;
    char *buf = malloc(size + 1); /* +1: room for the convenience NUL */
    if (!buf) {
        close(fd);
        return vrl_error("%s: out of memory reading %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(buf);
            close(fd);
            return vrl_error("%s: read failed: %s", path, strerror(e));
        }
        if (r == 0) break; /* shrank while reading: take what is there */
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    *n = got;
    return 0;
}

int make_dirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return vrl_error("%s: path too long", path);
    size_t len = strlen(buf);
    if (len == 0) return vrl_error("make_dirs: empty path");
    while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
    /* Create each prefix in turn; EEXIST is fine as long as it is a directory. */
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST) return vrl_error("%s: cannot create: %s", buf, strerror(errno));
            struct stat st;
            if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) return vrl_error("%s: exists and is not a directory", buf);
            *p = saved;
            if (saved == '\0') break;
        }
    }
    return 0;
}

int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int remove_flat_dir(const char *path) {
    /* O_NOFOLLOW|O_DIRECTORY: a link (or a file) standing at `path` is removed itself; the folder
     * it points at is never opened, so nothing outside the run folder is emptied */
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT) return 0;
        if (errno != ELOOP && errno != ENOTDIR) return vrl_error("%s: cannot open: %s", path, strerror(errno));
        if (unlink(path) < 0 && errno != ENOENT) return vrl_error("%s: cannot remove: %s", path, strerror(errno));
        return 0;
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return vrl_error("%s: cannot open: %s", path, strerror(e));
    }
    int rc = 0;
    /* a folder inside (something a user put there) is never emptied: checked before anything
     * goes, so the folder is either removed whole or left whole */
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            rc = vrl_error("%s: holds a folder (%s) vrl did not make; left as it is", path, e->d_name);
            break;
        }
    }
    rewinddir(d);
    /* unlinkat relative to the descriptor: the entries of the folder opened above, whatever
     * happens to `path` meanwhile; a link inside is removed, not followed */
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (unlinkat(dfd, e->d_name, 0) < 0 && errno != ENOENT)
            rc = vrl_error("%s/%s: cannot remove: %s", path, e->d_name, strerror(errno));
    }
    closedir(d);
    if (!rc && rmdir(path) < 0 && errno != ENOENT) rc = vrl_error("%s: cannot remove: %s", path, strerror(errno));
    return rc;
}
