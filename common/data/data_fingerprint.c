/* data_fingerprint.c: the identity of a run's shards (data_fingerprint.h). */
#include "common/data/data_fingerprint.h"

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/hash.h"

#define HEADER_BYTES 64

/* One shard: its name (relative to what the user named), its size, its header. */
static int add_file(const char *path, const char *name, uint64_t *h) {
    uint64_t size;
    const int fd = open_regular(path, &size);
    if (fd < 0) return -1;
    unsigned char head[HEADER_BYTES] = {0};
    const ssize_t got = pread(fd, head, sizeof head, 0);
    close(fd);
    if (got < 0) return vrl_error("%s: cannot read", path);
    *h = fnv1a64(name, strlen(name) + 1, *h);
    *h = fnv1a64(&size, sizeof size, *h);
    *h = fnv1a64(head, (size_t)got, *h);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A folder's .bin files and sub-folders, in name order (depth-limited: data folders are
 * DIR/train/ and DIR/validation/ of .bin shards). */
static int add_dir(const char *dir, const char *rel, int depth, uint64_t *h) {
    DIR *d = opendir(dir);
    if (!d) return vrl_error("%s: cannot open", dir);
    char **names = NULL;
    size_t nn = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.') continue;
        if (nn == cap) {
            char **p = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *p);
            if (!p) { rc = vrl_error("%s: out of memory", dir); break; }
            names = p;
        }
        if (!(names[nn] = malloc(len + 1))) { rc = vrl_error("%s: out of memory", dir); break; }
        memcpy(names[nn++], e->d_name, len + 1);
    }
    closedir(d);
    if (rc == 0 && nn > 1) qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        char path[PATH_MAX], sub[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
            snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]) >= (int)sizeof sub) {
            rc = vrl_error("%s: path too long", dir);
            break;
        }
        if (stat(path, &st) != 0) continue;
        const size_t len = strlen(names[i]);
        if (S_ISDIR(st.st_mode) && depth > 0) rc = add_dir(path, sub, depth - 1, h);
        else if (S_ISREG(st.st_mode) && len > 4 && !strcmp(names[i] + len - 4, ".bin")) rc = add_file(path, sub, h);
    }
    for (size_t i = 0; i < nn; i++) free(names[i]);
    free(names);
    return rc;
}

int data_fingerprint(const char *data, char *out, size_t n) {
    out[0] = '\0';
    if (!data[0]) return 0;
    uint64_t h = FNV1A64_INIT;
    const char *p = data;
    while (*p) {
        const size_t len = strcspn(p, ",");
        char item[PATH_MAX];
        if (len >= sizeof item) return vrl_error("data path too long");
        memcpy(item, p, len);
        item[len] = '\0';
        struct stat st;
        if (stat(item, &st) != 0) return vrl_error("%s: cannot stat", item);
        const int rc = S_ISDIR(st.st_mode) ? add_dir(item, "", 2, &h) : add_file(item, "", &h);
        if (rc < 0) return -1;
        p += len;
        if (*p == ',') p++;
    }
    snprintf(out, n, "%016llx", (unsigned long long)h);
    return 0;
}
