import Testing

/// The environment the tests give the daemon they start.
@Suite struct ChildEnvironmentTests {
    /// Under `swift test --sanitize=address` the daemon is built with the sanitizer too: it gets
    /// the run's `ASAN_OPTIONS` (and the other sanitizers' settings), and nothing else of the
    /// test process's environment.
    @Test func theDaemon_getsTheSanitizersSettingsOfTheTestProcess_only() {
        let parent = [
            "ASAN_OPTIONS": "detect_leaks=0", "LSAN_OPTIONS": "suppressions=/tmp/lsan.supp", "TSAN_OPTIONS": "halt_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1", "HOME": "/root", "WEAVEDID_LOG": "debug",
        ]
        let env = DaemonProcess.childEnvironment([:], directory: "/tmp/d", parent: parent)
        #expect(env == [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "RUNTIME_DIRECTORY": "/tmp/d/run", "STATE_DIRECTORY": "/tmp/d/state",
            "WEAVEDI_REGISTRY_AUTO_HEALTH": "0", "ASAN_OPTIONS": "detect_leaks=0", "LSAN_OPTIONS": "suppressions=/tmp/lsan.supp",
            "TSAN_OPTIONS": "halt_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1",
        ])
    }

    /// What a test gives the daemon wins over the test process's settings ("" leaves one out).
    @Test func aTestsOwnSettings_winOverTheTestProcesss() {
        let parent = ["ASAN_OPTIONS": "detect_leaks=0", "TSAN_OPTIONS": "halt_on_error=1"]
        let env = DaemonProcess.childEnvironment(["ASAN_OPTIONS": "detect_leaks=1", "TSAN_OPTIONS": ""], directory: "/tmp/d", parent: parent)
        #expect(env["ASAN_OPTIONS"] == "detect_leaks=1")
        #expect(env["TSAN_OPTIONS"] == nil)
    }
}
