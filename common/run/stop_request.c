/* stop_request.c: the first SIGTERM/SIGINT is a request, the second an order (stop_request.h). */
#define _POSIX_C_SOURCE 200809L
#include "common/run/stop_request.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t requested; /* the first signal's number, 0 before */

static void say(const char *s) {
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w; /* nothing more can be done about a failed message inside a signal handler */
}

static void on_signal(int sig) {
    if (requested) {
        say("vrl train: second ");
        say(stop_request_name(sig));
        say(": exiting now; the last saved checkpoint is intact\n");
        _exit(128 + sig);
    }
    requested = sig;
    say("vrl train: ");
    say(stop_request_name(sig));
    say(": finishing the step in hand and saving it (send it again to exit now)\n");
}

static void set_handler(void (*h)(int)) {
    const int sigs[2] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        struct sigaction sa, old;
        /* a signal the parent set to be ignored (a background job's SIGINT) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = h;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* reads and writes carry on; the loop looks at the flag */
        sigaction(sigs[i], &sa, NULL);
    }
}

void stop_request_install(void) {
    requested = 0;
    set_handler(on_signal);
}

void stop_request_uninstall(void) { set_handler(SIG_DFL); }

int stop_request_signal(void) { return requested; }

const char *stop_request_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal"; }
