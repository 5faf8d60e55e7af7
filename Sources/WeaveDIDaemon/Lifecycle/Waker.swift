import Synchronization
import WeaveDIPosix

/// How the async side tells the main loop that the daemon has finished: an exit code and a
/// byte down a pipe the main loop polls.
public final class Waker: Sendable {
    private let pipeRead: Int32
    private let pipeWrite: Int32
    private let code = Atomic<Int32>(-1)
    /// When `finish` was first called (monotonic nanoseconds).
    private let finishedAt = Atomic<UInt64>(0)

    /// Creates the pipe (close-on-exec, non-blocking).
    public init() throws(Errno) {
        let pipe = try OwnedPipe.make(closeOnExec: true, nonBlocking: true)
        // The pipe lives as long as the process: its ends are released, never closed.
        let ends = pipe.release()
        pipeRead = ends.read.rawValue
        pipeWrite = ends.write.rawValue
    }

    /// The descriptor the main loop polls.
    public var readEnd: FileDescriptor { FileDescriptor(rawValue: pipeRead) }

    /// Records `exitCode` (the first one wins) and wakes the main loop.
    public func finish(_ exitCode: Int32) {
        _ = finishedAt.compareExchange(
            expected: 0, desired: SystemClock.monotonicNanoseconds(), ordering: .relaxed)
        _ = code.compareExchange(expected: -1, desired: exitCode, ordering: .acquiringAndReleasing)
        wake()
    }

    /// When `finish` was first called (monotonic nanoseconds), once it was.
    public var finishedAtNanoseconds: UInt64? {
        exitCode == nil ? nil : finishedAt.load(ordering: .relaxed)
    }

    /// Wakes the main loop without finishing.
    public func wake() {
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { try? FileDescriptor(rawValue: pipeWrite).write($0) }
    }

    /// The exit code, once `finish` was called.
    public var exitCode: Int32? {
        let value = code.load(ordering: .acquiring)
        return value < 0 ? nil : value
    }

    /// Empties the pipe (after poll said it is readable).
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while let n = try? buffer.withUnsafeMutableBytes({ try readEnd.read(into: $0) }), n > 0 {}
    }
}
