import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// SHA-256 against the FIPS 180-4 and NIST example vectors.
@Suite struct MirrorEngineHashTests {
    private func hex(_ bytes: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(bytes)
        return SHA256.hex(hash.finalize())
    }

    @Test func knownVectors() {
        #expect(hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hex(Array(("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
            + "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu").utf8))
            == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(hex([UInt8](repeating: 0x61, count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func incrementalUpdates_matchOneShot_atEveryBlockBoundary() {
        let message = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let whole = hex(message)
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 200, 300] {
            var hash = SHA256()
            hash.update(Array(message[..<split]))
            hash.update(Array(message[split...]))
            #expect(SHA256.hex(hash.finalize()) == whole, "split at \(split)")
        }
    }

    @Test func fileHasher_hashesFiles() throws {
        let fixture = try MirrorFixture()
        try fixture.write("abc", "abc")
        #expect(try FileHasher().hexDigest(ofFileAt: fixture.root + "/abc")
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(throws: Errno.noSuchFileOrDirectory) { try FileHasher().hexDigest(ofFileAt: fixture.root + "/none") }
    }

    @Test func fileHasher_inADirectory_neverFollowsALink() throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/real", "abc")
        try fixture.link("src/link", to: "real")
        let directory = try FileDescriptor.currentWorkingDirectory.openDirectory(at: fixture.source)
        let hasher = FileHasher()
        #expect(SHA256.hex(try hasher.digest(of: "real", in: directory.descriptor, side: .source, noAccessTime: true))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(throws: MirrorFailure.replaced(.symbolicLink)) {
            _ = try hasher.digest(of: "link", in: directory.descriptor, side: .source, noAccessTime: false)
        }
        #expect(throws: MirrorFailure.vanished) {
            _ = try hasher.digest(of: "missing", in: directory.descriptor, side: .source, noAccessTime: true)
        }
        // Gone from the destination (the run's own copy) is said so: an error, not the source's doing.
        #expect(throws: MirrorFailure.vanishedFromDestination) {
            _ = try hasher.digest(of: "missing", in: directory.descriptor, side: .destination, noAccessTime: true)
        }
        #expect(throws: MirrorFailure.vanishedFromDestination) {
            _ = try hasher.digest(ofOwnUnreadable: "missing", in: directory.descriptor)
        }
    }
}
