#ifndef WEAVEDI_EARLY_SIGNALS_H
#define WEAVEDI_EARLY_SIGNALS_H

#include <stdbool.h>

/// Whether the constructor in early_signals.c blocked SIGTERM, SIGINT, SIGHUP, SIGUSR1 and
/// SIGUSR2 before main.
bool weavedi_signals_blocked_early(void);

#endif
