/* fsutil.h: the file-system habits every writer in vrl shares. */
#ifndef VRL_FSUTIL_H
#define VRL_FSUTIL_H

#include <stddef.h>

/* The temporary name of an output: `path` VRL_TMP_INFIX PID (model.safetensors.vrl.tmp.812),
 * a name no user file plausibly has; cleaning removes only such names of vrl's own files. */
#define VRL_TMP_INFIX ".vrl.tmp."

/* Write `n` bytes to `path` atomically: write `path.vrl.tmp.PID`, fsync it, rename over
 * `path`, fsync the directory. A crash leaves either the old file or the new one. `path` is
 * a name vrl chose (output_target): a device or FIFO there is refused. */
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

/* What an output at a name vrl chose (a file in a run or data folder) does to what stands
 * there: OUTPUT_REPLACE (nothing, a plain file or a link: a new file is renamed over it, a
 * link is never followed), or -1 with "PATH: not a regular file (KIND); ..." (a device or
 * FIFO: planted, never written into; a folder, block device or socket). */
enum { OUTPUT_REPLACE = 0, OUTPUT_DIRECT = 1 };
int output_target(const char *path);
/* The same for a path the user named on the command line (`--out`): a character device or
 * FIFO, or a link to one (/dev/stdout), is OUTPUT_DIRECT, written through; any other link is
 * refused ("PATH: is a symbolic link; refusing ..."), never replaced by a file. */
int output_target_named(const char *path);
/* Open the character device or FIFO at `path` (a named output) for writing, without creating
 * or truncating; non-blocking first, so a FIFO with no reader is an error at once. A
 * descriptor (blocking) or -1. */
int open_output_direct(const char *path);
/* Create `path.vrl.tmp.PID` new (a leftover or link of that name is removed first, O_EXCL |
 * O_NOFOLLOW); the name goes to tmp[n]; a descriptor or -1. */
int create_temp_beside(const char *path, char *tmp, size_t n);

/* Remove a folder of plain files and the folder itself (absent: fine). A link or file
 * standing at `path` is removed itself, never followed; entries are unlinked relative to
 * the folder's descriptor. A folder holding a subfolder is left whole (an error saying so). */
int remove_flat_dir(const char *path);

#endif
