/* fsutil.h: the file-system habits every writer in vrl shares. */
#ifndef VRL_FSUTIL_H
#define VRL_FSUTIL_H

#include <stddef.h>

/* Write `n` bytes to `path` atomically: write `path.tmp.PID`, fsync it, rename over
 * `path`, fsync the directory. A crash leaves either the old file or the new one. */
int write_file_atomic(const char *path, const void *data, size_t n);

/* Same, but the bytes come from `n_parts` separate buffers (header + payload). */
int write_file_atomic_parts(const char *path, const void *const *parts, const size_t *sizes, int n_parts);

/* Open `path` for reading only if it is a regular file: the open never blocks (O_NONBLOCK,
 * so a FIFO with no writer cannot hang it), fstat decides, then the descriptor is made
 * blocking again. Anything else (FIFO, device, socket, folder) is refused with
 * "PATH: not a regular file (KIND)". A descriptor and its size in *size (may be NULL), or -1. */
#include <stdint.h>
int open_regular(const char *path, uint64_t *size);
/* The same as a stdio stream ("rb"), or NULL. */
#include <stdio.h>
FILE *fopen_regular(const char *path);

/* Read a whole file into a malloc'd buffer (NUL-terminated for convenience). */
int read_file_all(const char *path, void **data, size_t *n);

/* mkdir -p */
int make_dirs(const char *path);

int file_exists(const char *path);

/* fsync a directory, so renames and new entries in it are durable. */
int fsync_dir(const char *dir);

/* Remove a folder of plain files and the folder itself (absent: fine). */
int remove_flat_dir(const char *path);

#endif
