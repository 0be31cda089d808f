/* fault.h: a test hook that makes the Nth file-system step of a process fail.
 *
 * Writers call fault_point() before each write, fsync, rename or symlink of a
 * checkpoint. Without the environment variable VRL_FAULT_AT_WRITE the hook does
 * nothing. With VRL_FAULT_AT_WRITE=N (N >= 1) the Nth call in the process either
 *   - kills the process with SIGKILL (the default, VRL_FAULT_MODE=kill), as a crash or
 *     power cut would, or
 *   - fails with ENOSPC (VRL_FAULT_MODE=enospc), as a full disk would: the caller
 *     sees -1 and errno == ENOSPC, or
 *   - stops the process with SIGSTOP (VRL_FAULT_MODE=stop) at the Nth call and at every
 *     later one, until SIGCONT: a test signals a run at a step it controls
 *     (conformance/test_reliability.sh sigterm_saves_step), never racing the run.
 * Used by conformance/test_crash_resume.sh to drive kills and full disks to every step
 * of a save deterministically. It is part of every build on purpose: the code under
 * test is the code users run. */
#ifndef VRL_FAULT_H
#define VRL_FAULT_H

/* 0, or -1 with errno = ENOSPC when this is the injected failure. `what` names the
 * step for VRL_FAULT_TRACE=1, which prints each step with its number to stderr. */
int fault_point(const char *what);

#endif
