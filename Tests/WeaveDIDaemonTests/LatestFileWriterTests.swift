import Foundation
import Testing
import WeaveDI
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
        #expect(log.contains(#"sync: cannot write the test file "\#(directory.path)/plain/state.json": "#), "\(log)")
        #expect(log.contains("ENOTDIR"), "\(log)")
        writer.write(Array("y".utf8), to: directory.path + "/state.json")
        await writer.flush()
        #expect(directory.read("state.json") == "y")
        try output.close()
    }

    /// `outcomeChanged` is awaited when a write ends otherwise than the one before (the first,
    /// a failure after a success, another failure, a success after a failure, another path),
    /// before the failure is logged, and `flush` waits for it; not after a write that ends as
    /// the one before (a check run, and the health reply made again, for every run's write).
    @Test func outcomeChanged_isAwaited_whenAWriteEndsOtherwiseThanTheOneBefore() async throws {
        let directory = TemporaryDirectory()
        let output = try FileDescriptor.open(directory.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: false, output: output)
        let told = Locked<[String]>([])
        let writer = LatestFileWriter(purpose: "the test file", permissions: 0o640, durable: false, log: log) { [directory] in
            // What the log holds when told: a failure is logged after it.
            let logged = (directory.read("log.txt") ?? "").split(separator: "\n").count
            told.withLock { $0.append("\(logged) lines logged") }
        }
        directory.write("plain", "not a directory")
        let good = directory.path + "/state.json", bad = directory.path + "/plain/state.json", bad2 = directory.path + "/plain/other.json"
        for (path, outcomes) in [(good, 1), (good, 1), (bad, 2), (bad, 2), (bad2, 3), (good, 4), (good, 4)] {
            writer.write(Array("x".utf8), to: path)
            await writer.flush()
            #expect(told.withLock { $0.count } == outcomes, "\(path)")
        }
        #expect(told.withLock { $0 } == ["0 lines logged", "0 lines logged", "2 lines logged", "3 lines logged"])
        try output.close()
    }
}
