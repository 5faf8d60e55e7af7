#include "weavedi_thread.h"

__thread void *weavedi_thread_state_storage = 0;
