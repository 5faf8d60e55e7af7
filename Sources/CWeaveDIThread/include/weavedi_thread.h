#ifndef WEAVEDI_THREAD_H
#define WEAVEDI_THREAD_H

/// This thread's WeaveDI resolution state (NULL until the thread first builds a service).
/// A C thread-local, because reading it is one instruction where pthread_getspecific is a call;
/// the library still registers a pthread key, only for its destructor.
extern __thread void *_Nullable weavedi_thread_state_storage;

static inline void *_Nullable weavedi_thread_state(void) {
    return weavedi_thread_state_storage;
}

static inline void weavedi_set_thread_state(void *_Nullable state) {
    weavedi_thread_state_storage = state;
}

#endif
