/* data_stage.c: stage folder and publish by rename for data commands (data_stage.h). */
#define _GNU_SOURCE /* renameat2, RENAME_EXCHANGE */
#include "cli/data_stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"

#define STAGE_PREFIX ".vrl.tmp."

static int owned_name(const DataStage *s, const char *name) {
    for (int i = 0; s->owned[i]; i++)
        if (!strcmp(s->owned[i], name)) return 1;
    return 0;
}

/* ".vrl.tmp.DIGITS": a stage folder of this command's, maybe a killed run's */
static int stage_name(const char *name) {
    const size_t n = strlen(STAGE_PREFIX);
    if (strncmp(name, STAGE_PREFIX, n) || !name[n]) return 0;
    for (const char *t = name + n; *t; t++)
        if (*t < '0' || *t > '9') return 0;
    return 1;
}

/* Remove a stage folder: its owned entries (files, or folders of files), then itself. */
static int remove_stage(const char *stage) {
    char path[8400];
    int rc = 0;
    DIR *d = opendir(stage);
    if (!d) return errno == ENOENT ? 0 : vrl_error("%s: cannot open: %s", stage, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", stage, e->d_name);
        if (remove_flat_dir(path) < 0) rc = -1; /* a file or link there is removed itself */
    }
    closedir(d);
    if (!rc && rmdir(stage) < 0 && errno != ENOENT) rc = vrl_error("%s: cannot remove: %s", stage, strerror(errno));
    return rc;
}

/* OUT holds only owned names (a folder among them of plain files only) and stage folders. */
static int check_out(const DataStage *s) {
    DIR *d = opendir(s->out);
    if (!d) return errno == ENOENT ? 0 : vrl_error("--out %s: cannot open: %s", s->out, strerror(errno));
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || stage_name(e->d_name)) continue;
        char path[8400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", s->out, e->d_name);
        int ours = owned_name(s, e->d_name) && lstat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
        if (ours && S_ISDIR(st.st_mode)) { /* a folder of the command's: plain files only */
            DIR *sub = opendir(path);
            for (struct dirent *f; ours && sub && (f = readdir(sub));) {
                char p2[8700];
                snprintf(p2, sizeof p2, "%s/%s", path, f->d_name);
                ours = !strcmp(f->d_name, ".") || !strcmp(f->d_name, "..") || (lstat(p2, &st) == 0 && S_ISREG(st.st_mode));
            }
            if (sub) closedir(sub);
            else ours = 0;
        }
        if (!ours)
            rc = vrl_error("--out %s: not empty and not a folder this command wrote (%s is not its); choose a new or "
                           "empty folder",
                           s->out, e->d_name);
    }
    closedir(d);
    return rc;
}

int data_stage_open(DataStage *s, const char *out, const char *const *owned) {
    memset(s, 0, sizeof *s);
    s->owned = owned;
    if (snprintf(s->out, sizeof s->out, "%s", out) >= (int)sizeof s->out) return vrl_error("--out: path too long");
    if (check_out(s) < 0) return -1;
    struct stat st;
    s->made_out = lstat(out, &st) != 0;
    if (make_dirs(out) < 0) return -1;
    DIR *d = opendir(out); /* stage folders of killed runs */
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[8400];
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        if (stage_name(e->d_name) && remove_stage(path) < 0) {
            closedir(d);
            return -1;
        }
    }
    if (d) closedir(d);
    snprintf(s->dir, sizeof s->dir, "%s/" STAGE_PREFIX "%ld", out, (long)getpid());
    if (mkdir(s->dir, 0755) < 0) return vrl_error("%s: cannot create: %s", s->dir, strerror(errno));
    return 0;
}

/* Swap `from` and `to` in one step where the file system can, else two renames. */
static int exchange(const char *from, const char *to) {
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return vrl_error("%s: cannot replace by %s: %s", to, from, strerror(errno));
    char old[8500];
    snprintf(old, sizeof old, "%s.old", from);
    if (rename(to, old) < 0 || rename(from, to) < 0 || rename(old, from) < 0)
        return vrl_error("%s: cannot replace by %s: %s", to, from, strerror(errno));
    return 0;
}

int data_stage_publish(DataStage *s) {
    for (int i = 0; s->owned[i]; i++) {
        char from[8400], to[8400];
        struct stat st;
        snprintf(from, sizeof from, "%s/%s", s->dir, s->owned[i]);
        snprintf(to, sizeof to, "%s/%s", s->out, s->owned[i]);
        const int have_new = lstat(from, &st) == 0, have_old = lstat(to, &st) == 0;
        if (have_new && have_old ? exchange(from, to) < 0
            : have_new         ? rename(from, to) < 0 && vrl_error("%s: cannot rename to %s: %s", from, to, strerror(errno))
            : have_old         ? rename(to, from) < 0 && vrl_error("%s: cannot move aside: %s", to, strerror(errno))
                               : 0)
            return -1;
    }
    if (fsync_dir(s->out) < 0) return -1;
    return remove_stage(s->dir); /* now the previous result's entries */
}

void data_stage_discard(DataStage *s) {
    char why[VRL_ERROR_LEN];
    snprintf(why, sizeof why, "%s", vrl_last_error());
    if (s->dir[0]) remove_stage(s->dir);
    if (s->made_out) rmdir(s->out);
    vrl_error("%s (%s is as it was)", why, s->out);
}
