/* runlock.h: one `vrl train` per run folder at a time.
 *
 * RUN/.lock is held with flock(LOCK_EX) for the life of the run and holds the
 * holder's PID as text, so a second run on the folder is refused with a message
 * naming that process. The kernel drops the lock when the holder exits or is killed,
 * so a crash never leaves a folder locked; the file itself stays. */
#ifndef VRL_RUNLOCK_H
#define VRL_RUNLOCK_H

/* Lock RUN (which must exist). Returns a descriptor for run_unlock, or -1 with
 * vrl_error "RUN: in use by another vrl train (pid N)". */
int run_lock(const char *run);
void run_unlock(int fd);

#endif
