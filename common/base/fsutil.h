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

/* What an output at `path` does to what stands there: OUTPUT_REPLACE (nothing, a plain file
 * or a link: a new file is renamed over it, a link is never followed), OUTPUT_DIRECT (a
 * character device or FIFO, /dev/null: written as it is, never renamed over), or -1 with
 * "PATH: not a regular file (KIND); refusing to replace it" (folder, block device, socket). */
enum { OUTPUT_REPLACE = 0, OUTPUT_DIRECT = 1 };
int output_target(const char *path);
/* Open the character device or FIFO at `path` for writing, without creating, truncating or
 * following a link; a descriptor or -1. */
int open_output_direct(const char *path);
/* Create `path.tmp.PID` new (a leftover or link of that name is removed first, O_EXCL |
 * O_NOFOLLOW); the name goes to tmp[n]; a descriptor or -1. */
int create_temp_beside(const char *path, char *tmp, size_t n);

/* Remove a folder of plain files and the folder itself (absent: fine). A link or file
 * standing at `path` is removed itself, never followed; entries are unlinked relative to
 * the folder's descriptor. */
int remove_flat_dir(const char *path);

#endif
