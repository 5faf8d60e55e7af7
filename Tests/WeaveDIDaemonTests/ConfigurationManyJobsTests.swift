import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIControl
import WeaveDIPosix

/// Configurations of thousands of mirror jobs: the checks that no two jobs' trees meet find the
/// first pair that does without comparing each job with every other (`MirrorTreeIndex`), and
/// take no step limit meant for a file system that does not answer (`LoadStep.checking`).
@Suite struct ConfigurationManyJobsTests {
    /// `count` mirror jobs under `d`, each with a source and a destination of its own
    /// (`d/src/jN`, `d/dst/jN`), and the control socket under `d/run`; `jobs` replaces a job's
    /// `(source, destination)` by its index.
    static func document(_ d: String, count: Int, replacing jobs: [Int: (String, String)] = [:]) -> String {
        let entries = (0..<count).map { index in
            let (source, destination) = jobs[index] ?? ("\(d)/src/j\(index)", "\(d)/dst/j\(index)")
            return #"{"name": "j\#(index)", "source": "\#(source)", "destination": "\#(destination)", "interval": 3600}"#
        }
        return #"{"control": {"socket": "\#(d)/run/control.sock"}, "sync": {"jobs": [\#(entries.joined(separator: ",\n"))]}}"#
    }

    /// Before, each job was compared with every earlier one while the file's read was timed:
    /// at 1,000 jobs and more the check failed with `reading the file did not answer within 5 s`
    /// and exit 75 (a restart loop under systemd), with a thread left behind as stuck.
    @Test func checkConfig_ofTwoThousandMirrorJobs_passes() throws {
        let directory = TemporaryDirectory("weavedi-many-jobs")
        let d = directory.path
        // The sources exist (each its own anchor), the destinations not yet (all below `dst`).
        for index in 0..<2000 {
            try FileManager.default.createDirectory(atPath: "\(d)/src/j\(index)", withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(atPath: "\(d)/dst", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", Self.document(d, count: 2000))
        let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(checked.status == .exited(0), "\(checked.standardErrorText.prefix(2000))")
        // Each missing destination is a warning (its runs fail until it is made), counted in
        // the verdict; the first 10 are printed, the others counted in one line.
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 2000 warnings (\(config))\n")
        let lines = checked.standardErrorText.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 12, "\(checked.standardErrorText.prefix(4000))")
        for index in 0..<10 {
            #expect(lines[index].hasPrefix(
                "weavedid: warning: \(config): sync.jobs[\(index)].destination: the destination \"\(d)/dst/j\(index)\" of job \"j\(index)\" does not exist;"),
                "\(lines[index])")
        }
        #expect(lines.dropFirst(10).joined(separator: "\n") == "weavedid: warning: \(config): 1990 more path warnings like these, not shown\n")
    }

    /// More jobs than `DaemonConfiguration.Sync.maximumJobs` are refused before any is read
    /// (the last one's error, its name repeated, is not reached), with the file, the key, the
    /// count and the limit, and exit 78 as any configuration error.
    @Test func checkConfig_ofMoreJobsThanTheLimit_isRefused_namingTheCountAndTheLimit() throws {
        let directory = TemporaryDirectory("weavedi-many-jobs")
        let d = directory.path
        let config = directory.write("weavedid.json", Self.document(d, count: 4097, replacing: [4096: ("\(d)/src/j0", "\(d)/dst/j0")]))
        let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(checked.status == .exited(78))
        #expect(checked.standardOutput.isEmpty)
        #expect(checked.standardErrorText == "weavedid: \(config): sync.jobs: expected at most 4096 jobs, got 4097\n")
        // The limit itself is taken.
        #expect(try loadConfiguration(Self.document("/srv/many", count: 4096)).sync.jobs.count == 4096)
    }

    /// A reload of a file with too many jobs is refused, saying why, and the jobs in effect stay.
    @Test func aReloadOfMoreJobsThanTheLimit_isRefused_andKeepsTheJobsInEffect() throws {
        let directory = TemporaryDirectory("weavedi-many-jobs")
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/src/j0", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", Self.document(d, count: 1))
        let daemon = try readyDaemon(["--config", config], directory: directory)
        directory.write("weavedid.json", Self.document(d, count: 5000))
        let problem = "\(config): sync.jobs: expected at most 4096 jobs, got 5000"
        let refusal = try reloadFailure(daemon.defaultSocket)
        #expect(refusal?.name == "io.weavedi.Daemon.ReloadRefused", "\(daemon.log)")
        #expect(refusal?.reply.parameter("reason")?.stringValue == problem, "\(daemon.log)")
        #expect(daemon.waitForLog("reload refused: \(problem); keeping the previous configuration"), "\(daemon.log)")
        let jobs = daemon.sendCallReply("ListJobs")?.parameter("jobs")?.arrayValue
        #expect(jobs?.compactMap { $0[member: "name"]?.stringValue } == ["j0"], "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func amongThousandsOfJobs_theFirstThatMeetsALaterOne_isNamed() throws {
        let d = "/srv/many"
        // Job 1999 meets job 1200 (its source inside that destination) and job 900 (its
        // destination that source): job 900 comes first.
        var jobs = [1999: ("\(d)/dst/j1200/x", "\(d)/src/j900")]
        #expect(errorText(Self.document(d, count: 2000, replacing: jobs))
            == #"sync.jobs[1999].destination: the destination "/srv/many/src/j900" is the source "/srv/many/src/j900" of job "j900" (sync.jobs[900]); the jobs would overwrite or delete each other's files"#)
        // A destination holding every source meets job 0 first, written differently.
        jobs = [1500: ("\(d)/elsewhere", "\(d)//src/./")]
        #expect(errorText(Self.document(d, count: 2000, replacing: jobs))
            == #"sync.jobs[1500].destination: the destination "/srv/many//src/./" contains the source "/srv/many/src/j0" of job "j0" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        // Of two pairs with one job, the first of `MirrorTreeOverlap.checkedPairs`.
        jobs = [3: ("\(d)/dst/j1/in", "\(d)/src/j1/out")]
        #expect(errorText(Self.document(d, count: 2000, replacing: jobs))
            == #"sync.jobs[3].destination: the destination "/srv/many/src/j1/out" is inside the source "/srv/many/src/j1" of job "j1" (sync.jobs[1]); the jobs would overwrite or delete each other's files"#)
    }

    @Test func amongThousandsOfJobs_theFirstThatMeetsALaterOneOnDisk_isNamed() throws {
        let directory = TemporaryDirectory("weavedi-many-jobs")
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/dst/j700", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(d)/dst/j1200", withIntermediateDirectories: true)
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: "\(d)/to-700", pointingTo: "dst/j700")
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: "\(d)/to-1200", pointingTo: "dst/j1200")
        // As written, job 1999 meets none; through the links, its source lies inside job 1200's
        // destination and its destination is job 700's: job 700 comes first.
        let configuration = try loadConfiguration(Self.document(d, count: 2000, replacing: [1999: ("\(d)/to-1200/in", "\(d)/to-700")]))
        #expect(throws: ConfigurationError(
            file: try #require(configuration.filePath), fieldPath: "sync.jobs[1999].destination",
            problem: #"the destination "\#(d)/to-700" of job "j1999" is the destination "\#(d)/dst/j700" of job "j700" (sync.jobs[700]) through symbolic links ("\#(d)/to-700" resolves to "\#(d)/dst/j700", "\#(d)/dst/j700" to "\#(d)/dst/j700"); the jobs would overwrite or delete each other's files"#)
        ) {
            try configuration.checkMirrorTreesOnDisk()
        }
    }

    /// `Index` against the comparisons it stands for: for each two roots of `pool`, whether one
    /// meets the other (`meets`, as before the index); then, for short lists of jobs whose roots
    /// are drawn from `pool`, whether each job's first overlap is the one that comparing it with
    /// each earlier job in turn (`first`) finds.
    static func compare<Root, Index: RootIndex>(
        _: Index.Type, pool: [Root], meets: (Root, Root) -> Bool,
        first: (MirrorTreeOverlap.Roots<Root>, MirrorTreeOverlap.Roots<Root>) -> Bool, _ indexed: (Root) -> Index.Root,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var met = 0
        for (a, root) in pool.enumerated() {
            for (b, other) in pool.enumerated() {
                var index = Index()
                index.add(indexed(other), at: 5)
                let expected = meets(root, other)
                #expect(index.first(meeting: indexed(root)) == (expected ? 5 : nil), "\(a) and \(b)", sourceLocation: sourceLocation)
                if expected { met += 1 }
            }
        }
        // Both kinds of pairs were tried.
        #expect(met > 0 && met < pool.count * pool.count, "\(met)", sourceLocation: sourceLocation)
        var numbers = TreeFixture.SplitMix(seed: 7)
        var overlaps: Set<Int?> = []
        for list in 0..<300 {
            var index = MirrorTreeIndex<Index>()
            var earlier: [MirrorTreeOverlap.Roots<Root>] = []
            for position in 0..<6 {
                let roots = MirrorTreeOverlap.Roots(source: pool.randomElement(using: &numbers)!, destination: pool.randomElement(using: &numbers)!)
                let expected = earlier.firstIndex { first(roots, $0) }
                #expect(index.firstOverlap(with: roots.map(indexed)) == expected, "list \(list), job \(position)", sourceLocation: sourceLocation)
                overlaps.insert(expected)
                index.add(roots.map(indexed), at: position)
                earlier.append(roots)
            }
        }
        // Jobs that meet none, and jobs whose first overlap is not the first job.
        #expect(overlaps.contains(nil) && overlaps.contains { ($0 ?? 0) > 1 }, "\(overlaps)", sourceLocation: sourceLocation)
    }

    @Test func theIndexByPath_findsTheJobThatComparingEachFindsFirst() {
        // Paths of few names, so that many meet: written with `//`, `.` and `..`, and with an
        // `é` of one code point and one of two, which are different bytes (and so paths).
        let names = ["a", "b", "ab", ".", "..", "", "\u{E9}", "e\u{301}"]
        var numbers = TreeFixture.SplitMix(seed: 1)
        let pool = (0..<60).map { _ in
            "/" + (0..<Int.random(in: 0...4, using: &numbers)).map { _ in names.randomElement(using: &numbers)! }.joined(separator: "/")
        }
        Self.compare(
            PathIndex.self, pool: pool, meets: { MirrorTreeOverlap.relation(of: $0, to: $1) != nil },
            first: { MirrorTreeOverlap.first($0, $1) != nil }, ConfigurationDirectories.normalizedComponents)
    }

    @Test func theIndexByIdentity_findsTheJobThatComparingEachFindsFirst() throws {
        // `mnt/alias` is `data/src` (a link standing in for a mount the table lists).
        let tree = try MountedLocationTests.Tree()
        try FileManager.default.createDirectory(atPath: tree.t + "/data/other", withIntermediateDirectories: false)
        let pool = [
            "", "data", "data/src", "data/src/new", "data/src/new/x", "data/other", "data/other/y", "data/missing",
            "data/missing/q", "mnt", "mnt/alias", "mnt/alias/new", "mnt/alias/z", "elsewhere/w",
        ].map { tree.locate($0) }
        Self.compare(
            LocationIndex.self, pool: pool, meets: { $0.relation(to: $1) != nil }, first: { MountedLocation.first($0, $1) != nil }, { $0 })
    }
}
