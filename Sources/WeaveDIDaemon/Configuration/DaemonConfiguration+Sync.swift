import WeaveDI

extension DaemonConfiguration {
    /// The `sync` section: the jobs and how many run at once.
    public struct Sync: Sendable, Equatable {
        /// How many job runs may be in progress at the same time; default 2, from 1 to 64.
        public var maxConcurrentRuns = 2
        /// A node_exporter textfile (`*.prom`) the daemon writes job metrics to; default none.
        public var metricsFile: String?
        /// The jobs, in file order; names are unique; at most `maximumJobs`.
        public var jobs: [Job] = []

        /// The most jobs a configuration may hold: a bound on what one start, reload or
        /// `--check-config` reads, checks and schedules (100,000 jobs took a minute to check),
        /// far above any real machine's jobs.
        public static let maximumJobs = 4096
    }

    /// One entry of `sync.jobs`: when it runs and how its health is judged.
    ///
    /// `kind` stays an open string so that kinds can be added in code; the only kind the
    /// configuration accepts today is `"mirror"`, whose settings are in `mirror`.
    public struct Job: Sendable, Equatable {
        /// The unique name: 1 to 64 characters from `A-Z a-z 0-9 . _ -` (`hasNameCharacters`),
        /// not `.` or `..`.
        public var name: String

        /// Whether `name` has the length and characters of a job name: 1 to 64 of `A-Z a-z
        /// 0-9 . _ -`.
        static func hasNameCharacters(_ name: String) -> Bool {
            (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
        }

        /// A job's name as messages quote it: `"docs"`, escaped as every value from outside
        /// is (`JSONValue.quotedForDisplay`), and whole: a configured name holds up to 64
        /// characters, which `JSONValue.quotedForMessage` would cut past 60.
        static func quoted(_ name: String) -> String {
            JSONValue.quotedForDisplay(name)
        }

        /// What the job does; default and only known kind: `"mirror"`.
        public var kind = "mirror"
        /// The time between runs; default 300 seconds, at least 1.
        public var interval: Duration = .seconds(300)
        /// A random delay of up to this much added to each run; default 0, less than `interval`.
        public var jitter: Duration = .zero
        /// Whether the job also runs right after the daemon starts; default false.
        public var runAtStart = false
        /// Whether the job is scheduled at all; default true.
        public var enabled = true
        /// Failed runs in a row after which the job counts as unhealthy; default 3, at least 1.
        public var failureThreshold = 3
        /// The job counts as unhealthy when no run succeeded within this many intervals; default 3.
        public var staleAfterIntervals = 3
        /// `staleAfterIntervals` intervals in seconds; a `Double`, for a `Duration` product can
        /// overflow (and trap) for a job built in code with a large `staleAfterIntervals`.
        var staleAfterSeconds: Double { seconds(interval) * Double(staleAfterIntervals) }
        /// The longest retry delay after failures; default 3600 seconds, at least 1.
        public var backoffCap: Duration = .seconds(3600)
        /// The mirror settings, present when `kind` is `"mirror"`.
        public var mirror: Mirror?

        init(name: String) {
            self.name = name
        }
    }

    /// What a `"mirror"` job copies and how.
    public struct Mirror: Sendable, Equatable {
        /// The directory mirrored (absolute).
        public var source: String
        /// The directory that becomes a copy of `source` (absolute, not inside it nor containing it).
        public var destination: String
        /// How changed files are recognised; default `.sizeAndModificationTime`.
        public var compare: CompareMode = .sizeAndModificationTime
        /// Whether files missing from the source are deleted from the destination; default false.
        public var delete = false
        /// Whether copies are flushed to storage (fsync) before they replace the old file; default true.
        public var durable = true
        /// How many files are copied in parallel, 1 to 256; nil (the default) means the number of cores.
        public var workers: Int?
        /// Whether the destination root must be the root of a mount (a backup disk mounted
        /// there) for a run to start; default false. Without it, a disk not mounted leaves its
        /// empty mount point, which the runs would fill on the file system underneath.
        public var destinationMountPoint = false

        init(source: String, destination: String) {
            self.source = source
            self.destination = destination
        }
    }

    /// How a mirror job decides that a file changed.
    public enum CompareMode: String, Sendable, Equatable, CaseIterable {
        /// Size and modification time differ (`"size-mtime"`): fast, the default.
        case sizeAndModificationTime = "size-mtime"
        /// Content checksums differ (`"checksum"`): reads every file.
        case checksum
    }
}
