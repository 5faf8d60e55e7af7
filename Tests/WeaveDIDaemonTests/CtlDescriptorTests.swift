import Testing

/// weavedictl started with standard descriptors closed.
@Suite struct CtlDescriptorTests {
    /// With standard output closed (`weavedictl ping >&-`), the control socket would take
    /// descriptor 1 and the answer would be written into it (or, as it was, into whatever
    /// else took the number, failing with EINVAL). weavedictl opens /dev/null there first: the
    /// call succeeds, its answer discarded.
    @Test func closedStandardOutput_isNotTakenByTheSocket() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.execute(
            ["/bin/sh", "-c", #"exec "$@" <&- >&-"#, "sh", CtlRun.binary, "--socket", daemon.defaultSocket, "ping"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.error.isEmpty, "\(run.error)")
    }
}
