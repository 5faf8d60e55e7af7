import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIDaemon
import WeaveDIPosix

/// A destination root that is a mount point (a backup disk): unmounted, the disk leaves its
/// empty mount point, which exists, so the rule that a run never creates a missing root does
/// not guard it. `destinationMountPoint` does: the real daemon, in a mount namespace of its own
/// where the tests mount a tmpfs on the destination and unmount it, refuses the run then, and
/// its fix neither creates the root nor runs into it. Without the field the hole stays, and
/// the daemon says so once.
@Suite struct DaemonDestinationMountPointTests {
    private static let notAMountPoint = "the destination root is not a mount point (destinationMountPoint): is its file "
        + "system mounted? Mount it there; a run would write into the file system underneath"
    private static let mountPointMissing = "the destination root does not exist, and must be a mount point "
        + "(destinationMountPoint): nothing creates it (a directory made there would be no mount, on the file system "
        + "underneath): create the mount point and mount its file system there"
    private static let notice = "is a mount point, which the job does not require: were its file system unmounted, runs "
        + "would fill the empty mount point on the file system underneath; set \"destinationMountPoint\": true in the job, "
        + "or make its destination a directory below the mount point (runs never create a missing destination root)"

    @Test func theField_isABooleanOfMirrorJobs_falseByDefault() throws {
        #expect(try loadConfiguration(jobDocument(#""destinationMountPoint": true"#)).sync.jobs.first?.mirror?.destinationMountPoint == true)
        #expect(try loadConfiguration(jobDocument(#""destinationMountPoint": false"#)).sync.jobs.first?.mirror?.destinationMountPoint == false)
        #expect(try loadConfiguration(jobDocument(#""delete": false"#)).sync.jobs.first?.mirror?.destinationMountPoint == false)
        #expect(errorText(jobDocument(#""destinationMountPoint": "yes""#))
            == #"sync.jobs[0].destinationMountPoint: expected true or false, got "yes""#)
        #expect(errorText(jobDocument(#""destinationMountPoint": 1"#)) == "sync.jobs[0].destinationMountPoint: expected true or false, got 1")
        #expect(errorText(jobDocument(#""destinationMountPoint": null"#)) == "sync.jobs[0].destinationMountPoint: expected true or false, got null")
    }

    /// `weavedid --check-config` names the field and what it expects.
    @Test func checkConfig_namesAWrongType() throws {
        let directory = TemporaryDirectory("weavedi-mount-point")
        let d = directory.path
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "m", "source": "\(d)/src", "destination": "\(d)/bk", "destinationMountPoint": "true"}]}}
            """)
        let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(checked.status == .exited(78))
        #expect(checked.standardErrorText
            == "weavedid: \(config): sync.jobs[0].destinationMountPoint: expected true or false, got \"true\"\n")
    }

    /// A daemon in a mount namespace of its own with a job mirroring `src` (four files) into
    /// `bk`, a tmpfs mounted there; where there are no mount namespaces, cancels the test (skipped).
    private struct Setup {
        let directory: TemporaryDirectory
        let daemon: DaemonProcess
        let client: VarlinkClient
        var d: String { directory.path }

        init(requiring: Bool?, autoFix: Bool = false) throws {
            directory = TemporaryDirectory("weavedi-mount-point")
            let d = directory.path
            for name in ["a", "b", "c", "d"] { directory.write("src/\(name).txt", name) }
            try FileManager.default.createDirectory(atPath: d + "/bk", withIntermediateDirectories: false)
            let wrapper = try MountNamespace.requiredWrapper()
            let field = requiring.map { #", "destinationMountPoint": \#($0)"# } ?? ""
            // With auto-fix, a health round every 0.1 s.
            let health = autoFix ? #""health": {"interval": 0.1}, "# : ""
            let config = directory.write("weavedid.json", """
                {\(health)"sync": {"jobs": [{"name": "m", "source": "\(d)/src", "destination": "\(d)/bk", "interval": 3600\(field)}]}}
                """)
            let environment = autoFix
                ? ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1", "WEAVEDI_REGISTRY_AUTO_FIX": "1"] : ["WEAVEDI_REGISTRY_AUTO_FIX": "0"]
            daemon = try DaemonProcess(["--config", config], environment: environment, directory: directory, wrapper: wrapper)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            client = try VarlinkClient(path: daemon.defaultSocket)
            try mount()
        }

        func mount() throws {
            let failed = try MountNamespace.run(["mount", "-t", "tmpfs", "tmpfs", d + "/bk"], inNamespaceOf: daemon.pid)
            try #require(failed == nil, "\(failed ?? "")")
        }

        func unmount() throws {
            let failed = try MountNamespace.run(["umount", d + "/bk"], inNamespaceOf: daemon.pid)
            try #require(failed == nil, "\(failed ?? "")")
        }

        func run() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.RunJob", [("name", .string("m"))]).parameter("run")
        }

        func fix() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.m"))]).parameter("fixes")?.arrayValue?.first
        }

        /// What is in `bk` as this test process sees it: the directory under the mount, which
        /// the daemon's namespace alone has.
        func underneath() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: d + "/bk").sorted()
        }

        /// The job's check as the daemon reports it.
        func check() throws -> JSONValue? { try client.check("job.m", method: "GetHealth") }

        /// The fixes recorded.
        func fixes() throws -> [JSONValue] {
            try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue ?? []
        }

        func stop() {
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        }
    }

    @Test func withTheField_aRunIntoTheUnmountedMountPoint_isRefused_andWritesNothing() throws {
        let setup = try Setup(requiring: true)
        let d = setup.d
        let mounted = try setup.run()
        #expect(mounted?[member: "result"]?.stringValue == "success", "\(String(describing: mounted))\n\(setup.daemon.log)")
        #expect(mounted?[member: "filesCopied"]?.intValue == 4)
        #expect(try setup.underneath().isEmpty)  // written into the tmpfs
        try setup.unmount()
        let refused = try setup.run()
        #expect(refused?[member: "result"]?.stringValue == "failed", "\(String(describing: refused))")
        #expect(refused?[member: "message"]?.stringValue == "\"\(d)/bk\": \(Self.notAMountPoint)", "\(String(describing: refused))")
        #expect(try setup.underneath().isEmpty)
        // Mounted again, the runs go on.
        try setup.mount()
        let again = try setup.run()
        #expect(again?[member: "result"]?.stringValue == "success", "\(String(describing: again))")
        #expect(again?[member: "filesCopied"]?.intValue == 4)
        // A job that requires the mount point is told nothing about it.
        #expect(!setup.daemon.log.contains(Self.notice), "\(setup.daemon.log)")
        setup.stop()
    }

    /// The hole the field closes, and only the field: without it, the empty mount point is
    /// filled. The daemon says so once per job, at its first run into the mount.
    @Test func withoutTheField_aRunFillsTheUnmountedMountPoint_whichTheLogSaidOnce() throws {
        let setup = try Setup(requiring: nil)
        let d = setup.d
        for _ in 0..<2 {
            let mounted = try setup.run()
            #expect(mounted?[member: "result"]?.stringValue == "success", "\(String(describing: mounted))\n\(setup.daemon.log)")
        }
        #expect(try setup.underneath().isEmpty)
        try setup.unmount()
        let filled = try setup.run()
        #expect(filled?[member: "result"]?.stringValue == "success", "\(String(describing: filled))")
        #expect(filled?[member: "filesCopied"]?.intValue == 4)
        #expect(try setup.underneath() == ["a.txt", "b.txt", "c.txt", "d.txt"])
        let line = "m: the destination root \"\(d)/bk\" \(Self.notice)"
        #expect(setup.daemon.log.components(separatedBy: line).count - 1 == 1, "\(setup.daemon.log)")
        #expect(setup.daemon.log.components(separatedBy: Self.notice).count - 1 == 1, "\(setup.daemon.log)")
        setup.stop()
    }

    /// `weavedictl fix job.m` neither creates a missing mount point nor starts a run into one
    /// not mounted: it fails, saying why, and nothing is made or written.
    @Test func withTheField_theJobsFix_neitherCreatesTheRootNorRunsIntoIt() throws {
        let setup = try Setup(requiring: true)
        let d = setup.d
        try setup.unmount()
        #expect(try setup.run()?[member: "result"]?.stringValue == "failed")
        let notMounted = try setup.fix()
        #expect(notMounted?[member: "outcome"]?.stringValue == "failed", "\(String(describing: notMounted))")
        #expect(notMounted?[member: "error"]?.stringValue == "\"\(d)/bk\": \(Self.notAMountPoint)", "\(String(describing: notMounted))")
        #expect(try setup.underneath().isEmpty)
        #expect(!setup.daemon.log.contains("run m-2 started"), "\(setup.daemon.log)")
        try FileManager.default.removeItem(atPath: d + "/bk")
        let missing = try setup.fix()
        #expect(missing?[member: "outcome"]?.stringValue == "failed", "\(String(describing: missing))")
        #expect(missing?[member: "error"]?.stringValue == "\"\(d)/bk\": \(Self.mountPointMissing)", "\(String(describing: missing))")
        #expect(!FileManager.default.fileExists(atPath: d + "/bk"))
        #expect(!setup.daemon.log.contains("run m-2 started"), "\(setup.daemon.log)")
        // A run says the same, and creates nothing either.
        let refused = try setup.run()
        #expect(refused?[member: "message"]?.stringValue == "\"\(d)/bk\": \(Self.mountPointMissing)", "\(String(describing: refused))")
        #expect(!FileManager.default.fileExists(atPath: d + "/bk"))
        // Mounted, the fix runs the job.
        try FileManager.default.createDirectory(atPath: d + "/bk", withIntermediateDirectories: false)
        try setup.mount()
        let fixed = try setup.fix()
        #expect(fixed?[member: "outcome"]?.stringValue == "succeeded", "\(String(describing: fixed))")
        #expect(fixed?[member: "message"]?.stringValue == "the destination root is mounted again; reset the backoff; run m-3 succeeded",
            "\(String(describing: fixed))")
        setup.stop()
    }

    /// Auto-fix (a round every 0.1 s) of a job whose run failed on its mount point not mounted:
    /// only a person can help, so the fix has nothing to do, round after round, silently (no
    /// record, no line in the log, the breaker closed), the check saying why; nothing is
    /// written underneath. Mounted again, the next automatic fix starts a run at once (the
    /// backoff would wait for nothing), which succeeds.
    @Test func withTheField_autoFix_waitsSilentlyForTheMount_thenRunsTheJob() throws {
        let setup = try Setup(requiring: true, autoFix: true)
        let d = setup.d
        try setup.unmount()
        let refused = try setup.run()
        #expect(refused?[member: "result"]?.stringValue == "failed", "\(String(describing: refused))\n\(setup.daemon.log)")
        var heldBack: String?
        for _ in 0..<3000 where heldBack == nil {
            heldBack = try setup.check()?[member: "fixHeldBack"]?.stringValue
            if heldBack == nil { usleep(10_000) }
        }
        #expect(heldBack == "its fix has nothing to do: \"\(d)/bk\": \(Self.notAMountPoint)", "\(String(describing: heldBack))\n\(setup.daemon.log)")
        // Twenty rounds more, each of which runs the check again (and would have run the fix).
        var rounds = Set<Double>()
        for _ in 0..<6000 where rounds.count < 20 {
            if let lastRun = try setup.check()?[member: "lastRun"]?.numberValue { rounds.insert(lastRun) }
            usleep(10_000)
        }
        #expect(rounds.count == 20)
        let recorded = try setup.fixes()
        #expect(recorded.isEmpty, "\(recorded)")
        #expect(!setup.daemon.log.contains("fix of"), "\(setup.daemon.log)")
        #expect(try setup.check()?[member: "breaker"]?.stringValue == "closed")
        #expect(!setup.daemon.log.contains("run m-2 started"), "\(setup.daemon.log)")
        #expect(try setup.underneath().isEmpty)

        try setup.mount()
        var automatic: JSONValue?
        for _ in 0..<3000 where automatic == nil {
            automatic = try setup.fixes().first { $0[member: "trigger"]?.stringValue == "automatic" }
            if automatic == nil { usleep(10_000) }
        }
        #expect(automatic?[member: "outcome"]?.stringValue == "succeeded", "\(String(describing: automatic))\n\(setup.daemon.log)")
        #expect(automatic?[member: "message"]?.stringValue == "the destination root is mounted again; run m-2 succeeded",
            "\(String(describing: automatic))")
        #expect(try setup.underneath().isEmpty)  // written into the tmpfs
        setup.stop()
    }
}
