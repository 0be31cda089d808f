/* runlock.c: the run-folder lock (runlock.h). */
#define _DEFAULT_SOURCE /* usleep */
#include "common/run/runlock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/run/run_paths.h"

int run_lock(const char *run) {
    char path[PATH_MAX];
    if (run_path(path, sizeof path, run, RUN_LOCK) < 0) return -1;
    /* O_NOFOLLOW: a .lock link (a folder received from elsewhere) is never written through */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ELOOP) return vrl_error("%s: is a symbolic link; remove it (vrl writes its pid there)", path);
    if (fd < 0) return vrl_error("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    /* the pid goes into this file: never into a device, FIFO, or a file linked from elsewhere */
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        close(fd);
        return vrl_error("%s: not a plain file of its own (a device, FIFO or hard link); remove it", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        char pid[32] = "";
        /* the holder may have locked and not yet written its pid: look again for a moment
         * rather than report "pid unknown" */
        for (int tries = 0; e == EWOULDBLOCK && !pid[0] && tries < 100; tries++) {
            if (tries) usleep(10000);
            ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
            pid[n > 0 ? n : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
        }
        close(fd);
        if (e != EWOULDBLOCK) return vrl_error("%s: cannot lock: %s", path, strerror(e));
        return vrl_error("%s: in use by another vrl train (pid %s); wait for it to finish or stop it", run,
                         pid[0] ? pid : "unknown");
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    /* written over the old pid, then cut to length: a reader never finds the file empty */
    if (pwrite(fd, pid, (size_t)len, 0) != len || ftruncate(fd, len) < 0) {
        int e = errno;
        close(fd);
        return vrl_error("%s: cannot write: %s", path, strerror(e));
    }
    return fd;
}

void run_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the last descriptor releases the flock */
}
