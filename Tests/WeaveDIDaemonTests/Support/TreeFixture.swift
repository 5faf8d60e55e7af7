import Foundation
import WeaveDIPosix

/// Builds source trees for mirror tests and compares trees exactly.
enum TreeFixture {
    /// `count` files of 1–16 KB in nested directories, `large` files of `largeSize` bytes, a
    /// symbolic link; deterministic content.
    static func make(at root: String, count: Int, large: Int = 0, largeSize: Int = 8 << 20) throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: root, withIntermediateDirectories: true)
        var generator = SplitMix(seed: 42)
        for i in 0..<count {
            let directory = "\(root)/d\(i % 20)/e\(i % 7)"
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let size = 1024 + Int(generator.next() % 15_360)
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            _ = manager.createFile(atPath: "\(directory)/f\(i).dat", contents: Data(bytes))
        }
        for i in 0..<large {
            let bytes = [UInt8](repeating: UInt8(i + 1), count: largeSize)
            _ = manager.createFile(atPath: "\(root)/large\(i).bin", contents: Data(bytes))
        }
        try manager.createSymbolicLink(atPath: "\(root)/link", withDestinationPath: "d0/e0/f0.dat")
    }

    /// Every entry below `root`: relative path → kind, mode, mtime (ns), size, content digest
    /// or link target. `.weavedi-tmp.*` entries are listed under their own names.
    static func snapshot(_ root: String) throws -> [String: String] {
        var entries: [String: String] = [:]
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: root) else { return [:] }
        while let relative = walker.nextObject() as? String {
            let path = root + "/" + relative
            let status = try FileStatus(path: path, followSymlinks: false)
            let mtime = Int64(status.modificationTime.seconds) * 1_000_000_000 + Int64(status.modificationTime.nanoseconds)
            switch status.kind {
            case .symbolicLink:
                entries[relative] = "link \(try manager.destinationOfSymbolicLink(atPath: path))"
            case .directory:
                entries[relative] = "dir \(String(status.permissions.rawValue, radix: 8))"
            default:
                let data = manager.contents(atPath: path) ?? Data()
                entries[relative] = "file \(String(status.permissions.rawValue, radix: 8)) \(mtime) \(data.count) \(digest(data))"
            }
        }
        return entries
    }

    static func digest(_ data: Data) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// A fast deterministic generator (SplitMix64): the same numbers in every run.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
