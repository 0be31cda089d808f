/* out_folder.c: which folders a new run may write into (out_folder.h). */
#include "common/run/out_folder.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/error.h"
#include "common/run/run_paths.h"

/* "PREFIX" followed by digits only */
static int numbered(const char *name, const char *prefix) {
    const size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) || !name[n]) return 0;
    for (const char *t = name + n; *t; t++)
        if (*t < '0' || *t > '9') return 0;
    return 1;
}

/* DIR/config.json is a plain file vrl wrote: a JSON object with vrl_variant. */
static int vrl_config(const char *dir) {
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, RUN_CONFIG) >= (int)sizeof path) return 0;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) return 0;
    json_t *j = json_load_file(path, 0, NULL);
    const int ours = json_is_object(j) && json_is_string(json_object_get(j, "vrl_variant"));
    json_decref(j);
    return ours;
}

/* DIR/checkpoints is a folder (not a link) of step-N and .stage-N entries only. */
static int vrl_checkpoints(const char *dir) {
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, RUN_CHECKPOINTS) >= (int)sizeof path) return 0;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    int ours = 1;
    for (struct dirent *e; ours && (e = readdir(d));)
        ours = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || numbered(e->d_name, "step-") ||
               numbered(e->d_name, ".stage-");
    closedir(d);
    return ours;
}

/* Every entry is .lock or a temporary file of vrl's own names: a new run killed before its
 * config.json appeared. */
static int vrl_started(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int ours = 1;
    for (struct dirent *e; ours && (e = readdir(d));)
        ours = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, RUN_LOCK) ||
               run_is_own_tmp(e->d_name);
    closedir(d);
    return ours;
}

int out_folder_check(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) /* missing: made by the run; not a folder: make_dirs says so */
        return errno == ENOENT || errno == ENOTDIR ? 0 : vrl_error("--out %s: cannot open: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    if (empty || vrl_config(dir) || vrl_checkpoints(dir) || vrl_started(dir)) return 0;
    return vrl_error("--out %s: not empty and not a vrl run folder (no config.json of vrl's, no checkpoints/); "
                     "choose a new or empty folder",
                     dir);
}
