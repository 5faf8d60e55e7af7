import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The writer behind the jobs' state file and the metrics file: the file ends with the content
/// asked for last, `flush` waits for it, and a write that fails is logged, naming the file.
@Suite struct LatestFileWriterTests {
    /// A writer whose log goes to `log.txt` in `directory`, through the descriptor returned.
    func writer(in directory: TemporaryDirectory, makesDirectory: Bool = false) throws -> (LatestFileWriter, FileDescriptor) {
        let output = try FileDescriptor.open(directory.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: false, output: output)
        return (LatestFileWriter(purpose: "the test file", permissions: 0o640, durable: true, makesDirectory: makesDirectory, log: log), output)
    }

    @Test func theFileEndsWithTheContentAskedForLast() async throws {
        let directory = TemporaryDirectory()
        let (writer, output) = try writer(in: directory)
        for n in 1...200 { writer.write(Array("\(n)".utf8), to: directory.path + "/state.json") }
        await writer.flush()
        #expect(directory.read("state.json") == "200")
        #expect(directory.read("log.txt") == "")
        // Written again after a flush, to another path too.
        writer.write(Array("a".utf8), to: directory.path + "/state.json")
        writer.write(Array("b".utf8), to: directory.path + "/other.json")
        await writer.flush()
        #expect(directory.read("other.json") == "b")
        let mode = try FileStatus(path: directory.path + "/other.json", followSymlinks: false).permissions
        #expect(mode == 0o640)
        try output.close()
    }

    @Test func theDirectoryIsMade_whenAskedFor() async throws {
        let directory = TemporaryDirectory()
        let (writer, output) = try writer(in: directory, makesDirectory: true)
        writer.write(Array("x".utf8), to: directory.path + "/state/sub/jobs.json")
        await writer.flush()
        #expect(directory.read("state/sub/jobs.json") == "x")
        try output.close()
    }

    @Test func aWriteThatFails_isLogged_namingTheFile_andTheNextOneIsTried() async throws {
        let directory = TemporaryDirectory()
        let (writer, output) = try writer(in: directory)
        directory.write("plain", "not a directory")
        writer.write(Array("x".utf8), to: directory.path + "/plain/state.json")
        await writer.flush()
        let log = directory.read("log.txt") ?? ""
        #expect(log.contains("sync: cannot write the test file \(directory.path)/plain/state.json: "), "\(log)")
        #expect(log.contains("ENOTDIR"), "\(log)")
        writer.write(Array("y".utf8), to: directory.path + "/state.json")
        await writer.flush()
        #expect(directory.read("state.json") == "y")
        try output.close()
    }
}
