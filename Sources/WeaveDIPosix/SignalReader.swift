import Glibc

/// One signal dequeued from a `SignalReader`, decoded from `struct signalfd_siginfo`.
public struct ReceivedSignal: Hashable, Sendable, CustomStringConvertible {
    /// The signal that arrived (`ssi_signo`).
    public var signal: Signal
    /// The process id of the sender (`ssi_pid`); 0 for kernel-generated signals.
    public var senderPID: Int32
    /// The real user id of the sender (`ssi_uid`).
    public var senderUID: UInt32
    /// How the signal was sent (`ssi_code`), e.g. `SI_USER` (0) for `kill`, `SI_TKILL` (-6).
    public var code: Int32
    /// Exit status or signal of the child for `SIGCHLD` (`ssi_status`).
    public var status: Int32

    /// Creates a received signal from its parts.
    public init(signal: Signal, senderPID: Int32, senderUID: UInt32, code: Int32, status: Int32) {
        self.signal = signal
        self.senderPID = senderPID
        self.senderUID = senderUID
        self.code = code
        self.status = status
    }

    /// A textual form such as `SIGTERM (15) from pid 1`.
    public var description: String {
        "\(signal) from pid \(senderPID)"
    }

    /// Decodes one 128-byte `signalfd_siginfo` record.
    init(record: UnsafeRawBufferPointer) {
        // Offsets are fixed by the kernel ABI (linux/signalfd.h).
        signal = Signal(rawValue: Int32(bitPattern: record.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
        code = record.loadUnaligned(fromByteOffset: 8, as: Int32.self)
        senderPID = Int32(bitPattern: record.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        senderUID = record.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
        status = record.loadUnaligned(fromByteOffset: 40, as: Int32.self)
    }
}

/// Reads blocked signals as data through a `signalfd(2)` descriptor that works with `poll`.
///
/// Signals must be blocked (see `SignalSet.blockInCurrentThread()`) in every
/// thread, or some thread may receive them normally instead. `poll` and `read`
/// on a signalfd see process-directed signals and the signals directed at the
/// *calling* thread. The descriptor is close-on-exec and closed on deinit.
public struct SignalReader: ~Copyable, Sendable {
    /// The signalfd; poll it for `.readable`.
    public let descriptor: OwnedDescriptor
    /// The signals this reader accepts.
    public let signals: SignalSet

    /// Creates a signalfd for `signals`, non-blocking by default so `read()` can drain it.
    public init(signals: SignalSet, nonBlocking: Bool = true) throws(Errno) {
        var flags = LinuxSymbols.signalFDCloseOnExec
        if nonBlocking { flags |= LinuxSymbols.signalFDNonBlocking }
        var mask = signals.rawValue
        let raw = try DescriptorReserve.admit(valueOrErrno { LinuxSymbols.signalfd(-1, &mask, flags) })
        self.descriptor = OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
        self.signals = signals
    }

    /// The descriptor as a non-owning handle, for `PollDescriptor`.
    public var fileDescriptor: FileDescriptor { descriptor.descriptor }

    /// Dequeues one pending signal; `nil` when none is pending on a non-blocking reader.
    public func read() throws(Errno) -> ReceivedSignal? {
        try read(maximumCount: 1).first
    }

    /// Dequeues up to `maximumCount` pending signals; empty when none is pending (non-blocking).
    public func read(maximumCount: Int) throws(Errno) -> [ReceivedSignal] {
        let recordSize = LinuxSymbols.signalFDSiginfoSize
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: recordSize * Swift.max(1, maximumCount), alignment: 8)
        defer { buffer.deallocate() }
        let count: Int
        do {
            count = try fileDescriptor.read(into: buffer)
        } catch Errno.wouldBlock {
            return []
        }
        return stride(from: 0, to: count - count % recordSize, by: recordSize).map { offset in
            ReceivedSignal(record: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + recordSize]))
        }
    }

    /// Closes the signalfd now; the signals stay blocked.
    public consuming func close() throws(Errno) {
        try descriptor.close()
    }
}
