import WeaveDIPosix

/// The mounts of the daemon's mount namespace, from `/proc/self/mountinfo`: enough to name the
/// other paths at which a directory is seen through mounts.
///
/// A bind mount (`mount --bind /data/src /mnt/alias`) shows one directory at two paths: the
/// mount at `/mnt/alias` shows the directory `/data/src` of its file system, the one the mount
/// at `/` shows whole. A path below a mount point is a path on that mount's file system (the
/// mount's root, then the rest), and any mount of the same file system whose root holds that
/// path shows it too, at its own mount point. Each path so found is only a candidate: the
/// caller confirms it by device and inode (`MountedLocation`), so a line misread here, or a
/// mount hidden under another, can cost a finding but never make one up.
struct MountTable {
    /// One line of mountinfo.
    struct Mount: Equatable {
        /// The file system's device, `major:minor` as mountinfo writes it.
        let device: String
        /// The directory of that file system the mount shows; `/` for all of it.
        let root: String
        /// Where it is mounted.
        let mountPoint: String
    }

    let mounts: [Mount]
    private let byDevice: [String: [Mount]]
    private let byMountPoint: [String: [Mount]]

    init(_ mounts: [Mount]) {
        self.mounts = mounts
        byDevice = Dictionary(grouping: mounts, by: \.device)
        byMountPoint = Dictionary(grouping: mounts, by: \.mountPoint)
    }

    /// The mount point under which `path` lies as written: the longest of the table's mount
    /// points that is `path` or a directory above it, by components, with no system call (so
    /// also for a path on a file system that does not answer); nil when only `/` holds it.
    func mountPoint(containing path: String) -> String? {
        let components = ConfigurationDirectories.normalizedComponents(path)
        var best: (point: String, depth: Int)?
        for mount in mounts {
            let point = ConfigurationDirectories.normalizedComponents(mount.mountPoint)
            guard !point.isEmpty, point.count > (best?.depth ?? 0), components.starts(with: point) else { continue }
            best = (mount.mountPoint, point.count)
        }
        return best?.point
    }

    /// Where the table is read from.
    static let path = "/proc/self/mountinfo"

    /// The mounts now; none when mountinfo cannot be read (no `/proc`), which leaves the
    /// checks by path and by the identity of each path's own directories.
    static func current() -> MountTable {
        guard let file = try? FileDescriptor.open(path, .readOnly), let bytes = try? file.descriptor.readToEnd() else {
            return MountTable([])
        }
        return parse(bytes)
    }

    /// Reads mountinfo lines (`36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`:
    /// the device is the third field, the root the fourth, the mount point the fifth, with
    /// space, tab, newline and backslash written as `\040`, `\011`, `\012` and `\134`). A line
    /// with fewer fields, or a path that is not absolute or not UTF-8, is left out.
    static func parse(_ bytes: [UInt8]) -> MountTable {
        var mounts: [Mount] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: false)
            guard fields.count >= 5, let device = String(validating: fields[2], as: UTF8.self),
                let root = unescaped(fields[3]), let mountPoint = unescaped(fields[4])
            else { continue }
            mounts.append(Mount(device: device, root: root, mountPoint: mountPoint))
        }
        return MountTable(mounts)
    }

    /// A mountinfo path with its octal escapes (`\040`) decoded; nil when it is not an absolute
    /// UTF-8 path.
    private static func unescaped(_ field: ArraySlice<UInt8>) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.count)
        var index = field.startIndex
        while index < field.endIndex {
            let byte = field[index]
            if byte == UInt8(ascii: "\\"), field.endIndex - index >= 4 {
                let digits = field[(index + 1)...(index + 3)]
                if digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "7")).contains($0) }) {
                    let value = digits.reduce(0) { $0 * 8 + Int($1 - UInt8(ascii: "0")) }
                    if value <= 255 {
                        bytes.append(UInt8(value))
                        index += 4
                        continue
                    }
                }
            }
            bytes.append(byte)
            index += 1
        }
        guard bytes.first == UInt8(ascii: "/"), let path = String(validating: bytes, as: UTF8.self) else { return nil }
        return path
    }

    /// The other paths at which the object at the real path `path` may be seen: through every
    /// mount of its file system whose root holds it. Candidates, to be confirmed by device and
    /// inode; `path` itself is not among them.
    func otherPaths(of path: String) -> [String] {
        let components = ConfigurationDirectories.normalizedComponents(path)
        // The mounts at the longest mount point that holds the path (several when one hides another).
        for count in stride(from: components.count, through: 0, by: -1) {
            let mountPoint = "/" + components[..<count].joined(separator: "/")
            guard let mounted = byMountPoint[mountPoint] else { continue }
            let below = components[count...].joined(separator: "/")
            var found: [String] = []
            for mount in mounted {
                let onFileSystem = ConfigurationDirectories.join(mount.root, below)
                for other in byDevice[mount.device] ?? [] {
                    guard let rest = Self.rest(of: onFileSystem, below: other.root) else { continue }
                    let candidate = ConfigurationDirectories.normalized(ConfigurationDirectories.join(other.mountPoint, rest))
                    if !candidate.utf8.elementsEqual(ConfigurationDirectories.normalized(path).utf8),
                        !found.contains(where: { $0.utf8.elementsEqual(candidate.utf8) })
                    {
                        found.append(candidate)
                    }
                }
            }
            return found
        }
        return []
    }

    /// `path` relative to `directory` when it is that directory or below it (`""` for the
    /// directory itself); nil otherwise.
    private static func rest(of path: String, below directory: String) -> String? {
        let inner = ConfigurationDirectories.normalizedComponents(path)
        let outer = ConfigurationDirectories.normalizedComponents(directory)
        guard inner.count >= outer.count, zip(inner, outer).allSatisfy({ $0.utf8.elementsEqual($1.utf8) }) else {
            return nil
        }
        return inner[outer.count...].joined(separator: "/")
    }
}
