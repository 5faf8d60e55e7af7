import Glibc
import Testing
import WeaveDIPosix

@Suite struct ThreadTests {
    final class Token: Sendable {}

    @Test func detachedThread_runsItsBody_elsewhere_andLetsGoOfIt() throws {
        let started = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(started, 0, 0)
        defer {
            sem_destroy(started)
            started.deallocate()
        }
        nonisolated(unsafe) let signal = started
        let caller = pthread_self()
        nonisolated(unsafe) var ranElsewhere = false
        weak var released: Token?
        do {
            let token = Token()
            released = token
            try PosixThread.detach {
                _ = token
                ranElsewhere = pthread_equal(pthread_self(), caller) == 0
                sem_post(signal)
            }
        }
        while sem_wait(started) != 0 {}
        #expect(ranElsewhere)
        // The thread owns its closure and frees it when the body returns.
        var waited = 0
        while released != nil, waited < 500 {
            usleep(10_000)
            waited += 1
        }
        #expect(released == nil)
    }
}
