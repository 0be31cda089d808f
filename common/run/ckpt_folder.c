/* ckpt_folder.c: step folders, the RUN/latest pointer and the top-level links
 * (ckpt_folder.h). Every file-system step calls fault_point() first, so the crash test
 * can stop a save at each of them. */
#include "common/run/ckpt_folder.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fault.h"
#include "common/base/fsutil.h"
#include "common/run/run_paths.h"

#define CKPT_DIR RUN_CHECKPOINTS
#define LATEST RUN_LATEST
#define STEP_FMT "step-%06ld"
#define STAGE_FMT ".stage-%06ld"

/* Files of a checkpoint that the run folder also shows at its top level. */
static const char *const linked_files[] = {RUN_MODEL, RUN_TRAIN_STATE};
#define N_LINKED ((int)(sizeof linked_files / sizeof linked_files[0]))

/* snprintf into a path buffer; a path that does not fit is an error, never cut short. */
static int pathf(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (w < 0 || w >= (int)n) return vrl_error("path too long (%.80s...)", out);
    return 0;
}

/* "step-000120" -> 120; -1 for any other name. */
static long step_of(const char *name, const char *prefix) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) || !name[pl]) return -1;
    char *end;
    errno = 0;
    long s = strtol(name + pl, &end, 10);
    return (*end || errno || s < 0 || name[pl] < '0' || name[pl] > '9') ? -1 : s;
}

/* The step RUN/latest points at, or -1: no pointer, not a symlink (a copy made with
 * `cp -rL` or `scp -r` holds a folder there), a loop, not ours, or a step folder that is
 * not there (`rsync` without the links). */
static long latest_step(const char *run) {
    char p[PATH_MAX], target[PATH_MAX];
    if (pathf(p, sizeof p, "%s/%s", run, LATEST) < 0) return -1;
    ssize_t len = readlink(p, target, sizeof target - 1);
    if (len < 0) return -1;
    target[len] = '\0';
    const char *slash = strrchr(target, '/');
    const long s = step_of(slash ? slash + 1 : target, "step-");
    struct stat st;
    if (s < 0 || pathf(p, sizeof p, "%s/" CKPT_DIR "/" STEP_FMT, run, s) < 0 || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    return s;
}

int ckpt_steps(const char *run, long *steps, int max) {
    char dir[PATH_MAX];
    if (pathf(dir, sizeof dir, "%s/%s", run, CKPT_DIR) < 0) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        const long s = step_of(e->d_name, "step-");
        if (s < 0) continue;
        int i = n++; /* insertion, newest first */
        for (; i > 0 && steps[i - 1] < s; i--) steps[i] = steps[i - 1];
        steps[i] = s;
    }
    closedir(d);
    return n;
}

int ckpt_step_dir(const char *run, long step, char *dir, size_t n) {
    return pathf(dir, n, "%s/" CKPT_DIR "/" STEP_FMT, run, step);
}

int ckpt_needs_recovery(const char *run) {
    long newest;
    return latest_step(run) < 0 && ckpt_steps(run, &newest, 1) > 0;
}

/* RUN/checkpoints into dir[n], refused when it is a link: stage folders are made and step
 * folders removed inside it, and that never happens in a folder outside the run. */
static int ckpt_dir(const char *run, char *dir, size_t n) {
    if (pathf(dir, n, "%s/%s", run, CKPT_DIR) < 0) return -1;
    struct stat st;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        return vrl_error("%s: is a symbolic link; refusing to write or delete through it", dir);
    return 0;
}

/* Replace `link` by a symlink to `target` with one rename (atomic for readers). */
static int swap_symlink(const char *target, const char *link) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s" VRL_TMP_INFIX "%ld", link, (long)getpid()) >= (int)sizeof tmp)
        return vrl_error("%s: path too long", link);
    unlink(tmp);
    if (fault_point("symlink") < 0 || symlink(target, tmp) < 0)
        return vrl_error("%s: cannot create link: %s", tmp, strerror(errno));
    if (fault_point("rename link") < 0 || rename(tmp, link) < 0) {
        int e = errno;
        unlink(tmp);
        return vrl_error("%s: cannot replace: %s", link, strerror(e));
    }
    return 0;
}

int ckpt_stage(const char *run, long step, char *stage, size_t n) {
    char dir[PATH_MAX], name[64];
    if (ckpt_dir(run, dir, sizeof dir) < 0 || make_dirs(dir) < 0) return -1;
    if (pathf(name, sizeof name, STAGE_FMT, step) < 0 || pathf(stage, n, "%s/%s", dir, name) < 0) return -1;
    if (remove_flat_dir(stage) < 0) return -1;
    if (fault_point("mkdir stage") < 0 || mkdir(stage, 0755) < 0)
        return vrl_error("%s: cannot create: %s", stage, strerror(errno));
    return 0;
}

void ckpt_discard(const char *stage) {
    char keep[VRL_ERROR_LEN];
    snprintf(keep, sizeof keep, "%s", vrl_last_error());
    remove_flat_dir(stage);
    vrl_error("%s", keep);
}

/* Remove a step or stage folder vrl is done with. One holding a subfolder (a user's, not
 * vrl's) is left whole with a note, not an error: the run goes on, and no later --resume
 * trips over a step folder half removed. */
static int remove_step_folder(const char *path) {
    if (remove_flat_dir(path) == 0) return 0;
    if (!strstr(vrl_last_error(), "vrl did not make")) return -1;
    fprintf(stderr, "vrl train: note: %s\n", vrl_last_error());
    vrl_clear_error();
    return 0;
}

/* Remove step folders other than `latest` and the `keep_previous` steps below it. */
static int prune(const char *run, long latest, int keep_previous) {
    char dir[PATH_MAX], path[PATH_MAX];
    if (ckpt_dir(run, dir, sizeof dir) < 0) return -1;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : vrl_error("%s: cannot open: %s", dir, strerror(errno));
    long steps[256];
    int n = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long s = step_of(e->d_name, "step-");
        if (s >= 0 && s < latest && n < 256) steps[n++] = s;
        /* above a published latest: renamed but never published. Without a latest nothing
         * says which step is whole, so no step folder goes (the resume finds the newest). */
        if ((latest >= 0 && s > latest) || (s < 0 && step_of(e->d_name, ".stage-") >= 0)) {
            if (pathf(path, sizeof path, "%s/%s", dir, e->d_name) < 0) rc = -1;
            else if (fault_point("remove unpublished") < 0) rc = vrl_error("%s: cannot remove: %s", path, strerror(errno));
            else if (remove_step_folder(path) < 0) rc = -1;
        }
    }
    closedir(d);
    /* keep the largest keep_previous steps below latest */
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
        if (newer < keep_previous) continue;
        if (pathf(path, sizeof path, "%s/" STEP_FMT, dir, steps[i]) < 0) rc = -1;
        else if (fault_point("remove old step") < 0) rc = vrl_error("%s: cannot remove: %s", path, strerror(errno));
        else if (remove_step_folder(path) < 0) rc = -1;
    }
    return rc;
}

static int publish_links(const char *run, long step);

int ckpt_publish(const char *run, long step, int keep_previous) {
    char dir[PATH_MAX], stage[PATH_MAX], final[PATH_MAX];
    if (ckpt_dir(run, dir, sizeof dir) < 0) return -1;
    if (pathf(stage, sizeof stage, "%s/" STAGE_FMT, dir, step) < 0 ||
        pathf(final, sizeof final, "%s/" STEP_FMT, dir, step) < 0)
        return -1;
    if (fsync_dir(stage) < 0) return -1;
    if (remove_flat_dir(final) < 0) return -1; /* an unpublished leftover of the same step */
    if (fault_point("rename stage") < 0 || rename(stage, final) < 0)
        return vrl_error("%s: cannot rename to %s: %s", stage, final, strerror(errno));
    if (fsync_dir(dir) < 0) return -1;
    if (publish_links(run, step) < 0) return -1;
    return prune(run, step, keep_previous);
}

/* RUN/latest -> checkpoints/step-N (the one step that publishes), then the top-level links. */
static int publish_links(const char *run, long step) {
    char target[64], path[PATH_MAX], link_target[PATH_MAX];
    if (pathf(target, sizeof target, CKPT_DIR "/" STEP_FMT, step) < 0) return -1;
    if (pathf(path, sizeof path, "%s/%s", run, LATEST) < 0 || swap_symlink(target, path) < 0) return -1;
    /* The top-level links point through latest, so they are written once per folder
     * (and replace the plain files of a folder from before checkpoints/). */
    for (int i = 0; i < N_LINKED; i++) {
        char have[PATH_MAX];
        if (pathf(path, sizeof path, "%s/%s", run, linked_files[i]) < 0 ||
            pathf(link_target, sizeof link_target, LATEST "/%s", linked_files[i]) < 0)
            return -1;
        ssize_t len = readlink(path, have, sizeof have - 1);
        if (len >= 0 && (size_t)len == strlen(link_target) && !memcmp(have, link_target, (size_t)len)) continue;
        if (swap_symlink(link_target, path) < 0) return -1;
    }
    return fsync_dir(run);
}

int ckpt_republish(const char *run, long step) {
    char path[PATH_MAX];
    struct stat st;
    /* whatever stands at RUN/latest is not a link to a step: a copied folder, a file, a loop */
    if (pathf(path, sizeof path, "%s/%s", run, LATEST) < 0) return -1;
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode) ? remove_flat_dir(path) < 0 : unlink(path) < 0)
            return vrl_error("%s: cannot remove to re-create it: %s", path, strerror(errno));
    }
    return publish_links(run, step);
}

int ckpt_resolve(const char *run, char *dir, size_t n) {
    long s = latest_step(run);
    if (s < 0 && ckpt_steps(run, &s, 1) < 1) s = -1; /* no latest: the newest step folder */
    return s >= 0 ? pathf(dir, n, "%s/" CKPT_DIR "/" STEP_FMT, run, s) : pathf(dir, n, "%s", run);
}

int ckpt_exists(const char *run) {
    char p[PATH_MAX];
    long newest;
    if (latest_step(run) >= 0 || ckpt_steps(run, &newest, 1) > 0) return 1;
    struct stat st; /* a folder from before checkpoints/: a plain model file */
    return pathf(p, sizeof p, "%s/%s", run, linked_files[0]) == 0 && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int ckpt_clean(const char *run, int keep_previous) {
    DIR *d = opendir(run);
    if (!d) return errno == ENOENT ? 0 : vrl_error("%s: cannot open: %s", run, strerror(errno));
    char path[PATH_MAX];
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!run_is_own_tmp(e->d_name)) continue;
        if (pathf(path, sizeof path, "%s/%s", run, e->d_name) < 0) {
            rc = -1;
            break;
        }
        struct stat st; /* a folder of that name is nothing a writer left: kept */
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) continue;
        if (unlink(path) < 0 && errno != ENOENT) rc = vrl_error("%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    if (rc) return rc;
    /* with no published step (-1), every step folder is unpublished */
    return prune(run, latest_step(run), keep_previous);
}
