// weavedid handles SIGTERM, SIGINT and SIGHUP through a signalfd in its main loop, and reads
// SIGUSR1 and SIGUSR2 there too, only to say that it ignores them (their default action would
// end the process). They are blocked here, in a constructor that runs before main and before
// any thread exists, so the window in which a signal still has its default action (and would
// kill the process) is only the dynamic loader's work before this point. SIGPIPE is ignored
// for the same reason.
#include "early_signals.h"

#include <signal.h>

static bool blocked_early = false;

__attribute__((constructor(101))) static void weavedi_block_signals_early(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    blocked_early = sigprocmask(SIG_BLOCK, &set, 0) == 0;
    signal(SIGPIPE, SIG_IGN);
}

bool weavedi_signals_blocked_early(void) { return blocked_early; }
