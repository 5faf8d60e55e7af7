import Glibc
import Testing
@testable import WeaveDI

@Suite struct ChildProcessOutputTests {
    /// A child that writes more to standard error than a pipe holds, before its standard output
    /// ends, is read to the end (both pipes at once), not left waiting for room for good.
    @Test func aChildFillingStandardError_isReadToTheEnd() throws {
        let outcome = Locked<Result<ChildResult, any Error>?>(nil)
        Thread.detach {
            let result = Result { try ChildProcess.run("weavedi-probe", ["stderr-flood"]) }
            outcome.withLock { $0 = result }
        }
        // Bounded, so that a hang fails the test (the child needs a fraction of a second).
        for _ in 0..<1_200 where outcome.withLock({ $0 == nil }) { usleep(50_000) }
        let result = try #require(try outcome.withLock { $0 }?.get(), "the child's output was not read to the end in 60 s")
        #expect(result.status == 0)
        #expect(result.stdout == "done\n")
        #expect(result.stderr.utf8.count == 256 * 1_024)
    }
}
