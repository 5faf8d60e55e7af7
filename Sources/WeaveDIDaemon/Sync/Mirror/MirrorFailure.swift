import Glibc
import WeaveDIPosix

/// Why one entry could not be mirrored; its `reason` becomes a `MirrorIssue`.
enum MirrorFailure: Error, Equatable, CustomStringConvertible {
    /// A system call failed.
    case system(_ operation: String, Errno)
    /// The source file's size, mtime or ctime moved during the copy, or a read came up short:
    /// the copy is not published. `copyKept`: whether the destination has an earlier copy of the
    /// file (a regular file under its name), which stays; when it has none, the backup has no
    /// copy of the file at all, and the message must not say that one is kept.
    case changedWhileCopying(copyKept: Bool)
    /// The source entry disappeared between the listing and the copy: the source is in use
    /// (a warning, `MirrorReport.fail(_:_:)`).
    case vanished
    /// The destination entry the run was working on disappeared during the run: something else
    /// is changing the destination, and the source's entry is not in the backup (an error).
    case vanishedFromDestination
    /// The entry is no longer what the listing said (a file became a link or a directory).
    case replaced(FileKind)
    /// A directory is where a file or link should go, and `delete` is off.
    case directoryInTheWay
    /// The name on disk is not valid UTF-8, so it cannot be named safely.
    case nameNotUTF8
    /// A symbolic link's target is not valid UTF-8, so it cannot be copied exactly.
    case linkTargetNotUTF8
    /// The directory is the other root (reached through a bind mount): not descended.
    case otherRoot
    /// A mount point inside the destination (a file system, or a bind mount of another
    /// directory or file, perhaps of the source's): not entered, nothing in it changed.
    case mountPoint
    /// A directory of a tree being removed was moved elsewhere meanwhile (its parent, opened
    /// again through `..`, is another directory): not followed.
    case moved
    /// The container could not make a worker (`FileCopier`, `FileHasher`).
    case noWorker(String)
    /// Task cancellation interrupted the work; not an error of the entry.
    case cancelled
    /// The step was not tried: a thread is stuck on its path (`WalkWatch`, `StuckThreads`).
    case notTried(String)

    /// The text of the report entry. Running out of descriptors names the limit:
    /// `open: Too many open files (EMFILE): the descriptor limit is 1024 (RLIMIT_NOFILE; hard
    /// limit 1024), and every descriptor is in use`.
    var description: String {
        switch self {
        case let .system(operation, errno): "\(operation): \(DescriptorLimit.explain(errno))"
        case let .changedWhileCopying(copyKept):
            MirrorFailure.changedWhileCopyingPhrase
                + (copyKept ? "; the previous version is kept" : "; the destination has no copy of it yet")
        case .vanished: "vanished before it could be copied"
        case .vanishedFromDestination:
            "vanished from the destination during the run (something else is changing the destination)"
        case let .replaced(kind): "replaced by a \(kind.phrase) while being mirrored"
        case .directoryInTheWay: "a directory is in the way and delete is off"
        case .nameNotUTF8: "the name is not valid UTF-8; left alone"
        case .linkTargetNotUTF8: "the link's target is not valid UTF-8; left alone"
        case .otherRoot: "is the other root of the mirror (a bind mount?); not descended"
        case .mountPoint:
            "is a mount point inside the destination (another file system, or a bind mount of another directory or "
                + "file, perhaps of the source's); nothing in it is changed: unmount it, or mirror it as a job of its own"
        case .moved: "a directory inside was moved elsewhere while being removed; what is left stays"
        case let .noWorker(error): "no worker: \(error)"
        case .cancelled: "cancelled"
        case let .notTried(problem): problem
        }
    }

    /// What the description of `changedWhileCopying` starts with, an earlier copy kept or not.
    static let changedWhileCopyingPhrase = "changed while being copied"

    /// The failure saying that an entry of `side` vanished: `.vanished` for the source (in
    /// use: a warning), `.vanishedFromDestination` for the destination (an error).
    static func vanishing(from side: WalkStepKind.Side) -> MirrorFailure {
        switch side {
        case .source: .vanished
        case .destination: .vanishedFromDestination
        }
    }

    /// Runs `body`, turning an `Errno` into `.system(operation, errno)`; `ENOENT` means the
    /// entry vanished from `vanishingFrom` when that side is given (`vanishing(from:)`).
    static func attempt<T: ~Copyable>(
        _ operation: String,
        vanishingFrom side: WalkStepKind.Side? = nil,
        _ body: () throws -> T
    ) throws(MirrorFailure) -> T {
        do {
            return try body()
        } catch let error as Errno {
            if let side, error == .noSuchFileOrDirectory { throw vanishing(from: side) }
            throw .system(operation, error)
        } catch {
            // The bodies call WeaveDIPosix, which throws `Errno` only.
            throw .system(operation, Errno.ioError)
        }
    }
    /// Opens the entry `name` of `directory`, of the tree `side`, with `body`, naming the
    /// failures that mean it changed since the listing: `ENOENT` is `vanishing(from: side)`;
    /// `ELOOP` (`O_NOFOLLOW` met a link), `ENOTDIR` (a directory was asked for) and `ENXIO` (a
    /// socket, or a device without its driver) are `.replaced` by what `lstat` finds there now:
    /// `O_NOFOLLOW` with `O_DIRECTORY` fails on a link with `ENOTDIR`, so the error alone does
    /// not say.
    static func opening(
        _ name: String, in directory: FileDescriptor, side: WalkStepKind.Side, _ body: () throws -> OwnedDescriptor
    ) throws(MirrorFailure) -> OwnedDescriptor {
        do {
            return try body()
        } catch let error as Errno {
            switch error {
            case .noSuchFileOrDirectory:
                throw vanishing(from: side)
            case .tooManySymbolicLinkLevels, .notDirectory, Errno(rawValue: ENXIO):
                guard let now = try? directory.status(at: name, followSymlinks: false) else {
                    throw error == .tooManySymbolicLinkLevels ? .replaced(.symbolicLink) : .system("open", error)
                }
                throw .replaced(now.kind)
            default:
                throw .system("open", error)
            }
        } catch {
            throw .system("open", Errno.ioError)
        }
    }
}

extension FileKind {
    /// The kind in words, for messages: `symbolic link`, `character device`.
    var phrase: String {
        switch self {
        case .regular: "regular file"
        case .directory: "directory"
        case .symbolicLink: "symbolic link"
        case .socket: "socket"
        case .fifo: "fifo"
        case .characterDevice: "character device"
        case .blockDevice: "block device"
        case .unknown: "file of an unknown kind"
        }
    }
}

/// The prefix and shape of the temporary names copies are written to: `.weavedi-tmp.<name>.<random>`.
enum MirrorTemporaryName {
    /// What every temporary name starts with.
    static let prefix = ".weavedi-tmp."
    private static let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
    /// How many random letters end a temporary name, after a dot.
    private static let randomLength = 12

    /// Whether `name` has the whole shape of a temporary name of some run: the prefix, at
    /// least one byte of a name, a dot and twelve lowercase letters or digits. Such names are
    /// never mirrored and are removed from the destination by the next run; a name that only
    /// starts with the prefix (`.weavedi-tmp.notes`) is an ordinary file.
    static func isTemporary(_ name: String) -> Bool {
        let bytes = name.utf8
        guard bytes.count >= prefix.utf8.count + 1 + 1 + randomLength, bytes.starts(with: prefix.utf8) else {
            return false
        }
        let random = bytes.suffix(randomLength)
        guard random.allSatisfy({ letters.contains($0) }) else { return false }
        return bytes[bytes.index(random.startIndex, offsetBy: -1)] == UInt8(ascii: ".")
    }

    /// A fresh temporary name for `name`, at most 255 bytes (`NAME_MAX`): a long name is cut
    /// between two Unicode scalars (valid UTF-8 still), never by whole Characters, so that at
    /// least 226 of its bytes are kept (a name that is one grapheme of 255 bytes, "a" and 127
    /// combining accents, kept none, and `.weavedi-tmp..<random>` is not a temporary name).
    static func make(for name: String) -> String {
        // Twelve base-36 digits from one 64-bit random number: one getrandom call per name.
        var bits = UInt64.random(in: 0...UInt64.max)
        var digits: [UInt8] = []
        for _ in 0..<randomLength {
            digits.append(letters[Int(bits % 36)])
            bits /= 36
        }
        let random = String(decoding: digits, as: UTF8.self)
        let room = 255 - prefix.utf8.count - 1 - random.utf8.count
        let bytes = Array(name.utf8)
        if bytes.count <= room { return prefix + name + "." + random }
        // Cut before the scalar that does not fit whole: back over its continuation bytes
        // (0b10xxxxxx), at most three, so `end` stays at least `room - 3`.
        var end = room
        while end > 0 && bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return prefix + String(decoding: bytes[..<end], as: UTF8.self) + "." + random
    }
}
