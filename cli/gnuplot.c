/* gnuplot.c: gnuplot through fork/exec, never through a shell (gnuplot.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/error.h"

/* gnuplot's absolute path, found once in PATH's absolute entries: gnuplot runs in the output
 * folder, where an empty or relative entry ("::", "bin") would find a planted OUT/gnuplot */
static char gnuplot_exe[4200];

int gnuplot_available(void) {
    if (gnuplot_exe[0]) return 1;
    const char *path = getenv("PATH");
    if (!path) return 0;
    while (*path) {
        const size_t n = strcspn(path, ":");
        if (n > 0 && path[0] == '/' && n < sizeof gnuplot_exe - 10) {
            snprintf(gnuplot_exe, sizeof gnuplot_exe, "%.*s/gnuplot", (int)n, path);
            if (access(gnuplot_exe, X_OK) == 0) return 1;
        }
        path += n;
        if (*path == ':') path++;
    }
    gnuplot_exe[0] = '\0';
    return 0;
}

int gnuplot_run(const char *dir, const char *script, const char *output) {
    /* gnuplot opens its output by name and would follow a link planted there: the entry is
     * removed first (relative to the folder, the link itself), so gnuplot makes a new file */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return vrl_error("%s: cannot open: %s", dir, strerror(errno));
    if (unlinkat(dfd, output, 0) < 0 && errno != ENOENT) {
        int e = errno;
        close(dfd);
        return vrl_error("%s/%s: cannot replace: %s", dir, output, strerror(e));
    }
    close(dfd);
    if (!gnuplot_available()) return vrl_error("%s/%s: gnuplot not found in PATH's absolute folders", dir, script);
    fflush(NULL); /* the child must not repeat our buffered output */
    pid_t pid = fork();
    if (pid < 0) return vrl_error("%s/%s: cannot start gnuplot", dir, script);
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        execl(gnuplot_exe, "gnuplot", script, (char *)NULL); /* never a PATH lookup from inside dir */
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno == EINTR) continue;
        else return vrl_error("%s/%s: lost the gnuplot process", dir, script);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return vrl_error("%s/%s: gnuplot failed", dir, script);
    return 0;
}

void gnuplot_quote(FILE *f, const char *s) {
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        if (*s == '\n' || *s == '\r') fputc(' ', f); /* a newline would end the command */
        else fputc(*s, f);
    }
    fputc('\'', f);
}
