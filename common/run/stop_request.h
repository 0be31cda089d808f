/* stop_request.h: SIGTERM and SIGINT end a training run at a step boundary.
 * Clusters preempt with SIGTERM (SLURM's --signal, Kubernetes): the first signal asks the
 * trainer to finish the step in hand, save it and exit 128 + the signal (143 for SIGTERM,
 * 130 for SIGINT) with a line saying so; a second signal exits at once, as before. */
#ifndef VRL_STOP_REQUEST_H
#define VRL_STOP_REQUEST_H

/* Catch SIGTERM and SIGINT for the life of a run. */
void stop_request_install(void);
/* Give both back their default action. */
void stop_request_uninstall(void);
/* The signal that asked to stop (SIGTERM or SIGINT), or 0. */
int stop_request_signal(void);
/* "SIGTERM" / "SIGINT" */
const char *stop_request_name(int sig);

#endif
