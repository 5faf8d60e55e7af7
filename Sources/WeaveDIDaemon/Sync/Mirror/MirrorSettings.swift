import Glibc
import WeaveDIPosix

/// What a `MirrorEngine` run copies, and how: the engine's view of a `"mirror"` job.
public struct MirrorSettings: Sendable, Equatable {
    /// The directory mirrored; read, never modified.
    public var source: String
    /// The directory made into a copy of `source`; the only place the engine writes.
    public var destination: String
    /// How a changed file is recognised: size and modification time, or content checksums.
    public var compare: DaemonConfiguration.CompareMode
    /// Whether entries the source no longer has are removed from the destination.
    public var delete: Bool
    /// Whether each copy is on stable storage before it replaces the old file (one `syncfs` per
    /// batch of copies on ext4, XFS and Btrfs, an `fsync` per copy elsewhere), and each changed
    /// directory is flushed (fsync) after its renames.
    public var durable: Bool
    /// How many files are worked on at once, at least 1.
    public var workers: Int
    /// Whether a missing destination root is created (with missing parents); when false, a
    /// missing root fails the run, which guards against filling the disk under an unmounted one.
    public var createsDestination: Bool
    /// Whether the destination root must be the root of a mount (`statx`'s
    /// `STATX_ATTR_MOUNT_ROOT`) for a run to start: a backup disk not mounted leaves its empty
    /// mount point, which a run would fill on the file system underneath. A run refuses
    /// otherwise, as it does where the kernel cannot say (before Linux 5.8), and never creates
    /// such a root, missing. Default false.
    public var destinationMountPoint = false
    /// The file systems mounted below the source root at the runs before, as paths relative to
    /// it (`SourceMounts`; a job keeps them in `jobs.json`): with `delete`, one that is now an
    /// empty directory on its parent's file system while the destination has content there is
    /// left alone, as a file system that did not mount, and counted as an error of the run.
    /// The run's report says what to remember next (`MirrorReport.sourceMounts`). None by
    /// default; paths that are not relative, or name `.`, `..` or an empty name, are ignored.
    public var sourceMounts: [String] = []
    /// Whether the run also looks through the destination directories its walk does not visit
    /// (a source directory gone with `delete` off, unreadable, or replaced by a file) for
    /// unfinished copies (`.weavedi-tmp.*`) and removes them: the first run after one that
    /// never ended (killed, crashed, the power). Its report says whether it went through the
    /// whole destination (`MirrorReport.leftoverSweepDone`). Default false.
    public var sweepsLeftovers = false
    /// The paths (as the report gives them) whose skip as changed while being copied is an
    /// error of this run, having been one in the runs before (`ChangingFiles`): the progress
    /// counts such a file failed, as the run's summary then does, not done and skipped.
    public var changingTooOften: Set<String> = []
    /// The daemon job these settings are for, if any: messages say how to act on it.
    public var jobName: String? = nil
    /// The daemon's other mirror jobs, with their roots as configured. A run does not start when
    /// its roots overlap theirs, by path (`MirrorTreeOverlap`) or by device and inode
    /// (`MountedLocation`), both resolved as the run starts: links and mounts made since the
    /// configuration was read cannot turn two jobs' trees into one. None by default (an engine
    /// on its own).
    public var otherJobs: [OtherJob] = []
    /// The daemon's own paths that the destination may not reach (`ReservedPath`: the control
    /// socket, configured and passed by systemd, the state directory and its files, the metrics
    /// file), checked again as the run starts, resolved
    /// through links and located through mounts, as the configuration's load checked them: a
    /// link or mount made since can put them under the destination, where `delete` would
    /// remove them. None by default (an engine on its own).
    var reservedPaths: [ReservedPath] = []
    /// For tests: false leaves it to the walk, which never enters one root from the other, to
    /// keep a run's own two roots apart when a mount joins them (a run refuses to start then),
    /// so that the walk's guard can be tested with such mounts in place.
    var checksOwnRootsThroughMounts = true
    /// For tests: the flush that makes a durable batch durable before its renames (its `syncfs`,
    /// or its links' flush where there is none) fails with this error, as when `syncfs` reports
    /// a failed write.
    var flushFailure: Errno? = nil

    /// Settings with the configuration's defaults for everything but the two roots.
    public init(
        source: String,
        destination: String,
        compare: DaemonConfiguration.CompareMode = .sizeAndModificationTime,
        delete: Bool = false,
        durable: Bool = true,
        workers: Int = MirrorSettings.defaultWorkers,
        createsDestination: Bool = true
    ) {
        self.source = source
        self.destination = destination
        self.compare = compare
        self.delete = delete
        self.durable = durable
        self.workers = max(1, workers)
        self.createsDestination = createsDestination
    }

    /// The settings of a configured mirror job; `workers` defaults to the number of cores.
    public init(_ mirror: DaemonConfiguration.Mirror) {
        self.init(
            source: mirror.source,
            destination: mirror.destination,
            compare: mirror.compare,
            delete: mirror.delete,
            durable: mirror.durable,
            workers: mirror.workers ?? MirrorSettings.defaultWorkers)
        destinationMountPoint = mirror.destinationMountPoint
    }

    /// Another mirror job: its name and its roots as configured.
    public struct OtherJob: Sendable, Equatable {
        /// The job's name.
        public var name: String
        /// Its source, as configured.
        public var source: String
        /// Its destination, as configured.
        public var destination: String

        /// Another job named `name` mirroring `source` into `destination`.
        public init(name: String, source: String, destination: String) {
            self.name = name
            self.source = source
            self.destination = destination
        }
    }

    /// The whole path of the destination entry at `relative` (a report's path, relative to the
    /// roots; `.` or empty for the root), as the destination is configured: for the `chmod` a
    /// message tells the operator to run.
    func destinationPath(of relative: String) -> String {
        guard !relative.isEmpty, relative != "." else { return destination }
        return destination.hasSuffix("/") ? destination + relative : destination + "/" + relative
    }

    /// The number of processors online, at least 1: the default for `workers`.
    public static var defaultWorkers: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
