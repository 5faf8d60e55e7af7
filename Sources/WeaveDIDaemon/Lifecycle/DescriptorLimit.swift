import WeaveDIPosix

/// The daemon's limit on open descriptors (`RLIMIT_NOFILE`): raised to the hard limit at start,
/// and named whenever running out of descriptors makes something fail.
///
/// A mirror run keeps a directory descriptor or two open per level of the tree it walks, and
/// each control connection holds one; the usual soft limit of 1024 is a limit for programs that
/// still use `select(2)`, whose descriptor sets stop at 1023. The daemon does not (the control
/// socket, the main loop and the mirror use `poll(2)`, the Swift runtime's dispatch uses epoll)
/// and starts no other program that could inherit the raised limit, so, as `systemd.exec(5)`
/// recommends for such programs, it raises its soft limit to the hard limit (524288 under
/// systemd by default).
enum DescriptorLimit {
    /// What `raiseSoftLimit` found and did.
    enum Outcome: Equatable {
        /// The soft limit was raised from `from` to the hard limit.
        case raised(from: UInt64, to: UInt64)
        /// The soft limit already was the hard limit.
        case alreadyAtHardLimit(UInt64)
        /// The limit could not be read, or not raised; `limit` is what is in effect, if known.
        case failed(Errno, limit: ResourceLimit?)
    }

    /// Raises the soft limit on open descriptors to the hard limit, and keeps the last few
    /// descriptors below it free for the runtime (`DescriptorReserve`).
    static func raiseSoftLimit() -> Outcome {
        let outcome = raise()
        if let limit = try? ResourceLimit.openFiles() {
            DescriptorReserve.size = DescriptorReserve.recommendedSize(forSoftLimit: limit.soft)
        }
        return outcome
    }

    private static func raise() -> Outcome {
        let limit: ResourceLimit
        do { limit = try ResourceLimit.openFiles() } catch { return .failed(error, limit: nil) }
        if limit.soft >= limit.hard { return .alreadyAtHardLimit(limit.soft) }
        do {
            try ResourceLimit.setOpenFiles(ResourceLimit(soft: limit.hard, hard: limit.hard))
        } catch {
            return .failed(error, limit: limit)
        }
        return .raised(from: limit.soft, to: limit.hard)
    }

    /// `; the last 16 are kept free for the Swift runtime`, or nothing without a reserve.
    private static var reserveText: String {
        let size = DescriptorReserve.size
        return size == 0 ? "" : "; the last \(size) are kept free for the Swift runtime"
    }

    /// Logs what `raiseSoftLimit` did: the raise as info (once, at start), a soft limit that
    /// already was the hard one as debug, a failure as a warning.
    static func log(_ outcome: Outcome, to log: DaemonLog) {
        switch outcome {
        case let .raised(from, to):
            log.info("daemon", "descriptor limit (RLIMIT_NOFILE): raised the soft limit from \(from) to the hard limit, \(ResourceLimit.text(to))\(reserveText)")
        case let .alreadyAtHardLimit(limit):
            log.debug("daemon", "descriptor limit (RLIMIT_NOFILE): \(ResourceLimit.text(limit)), the hard limit\(reserveText)")
        case let .failed(error, limit?):
            log.warning("daemon", "cannot raise the descriptor limit (RLIMIT_NOFILE) from \(ResourceLimit.text(limit.soft)) to the hard limit, \(ResourceLimit.text(limit.hard)): \(error); it stays \(ResourceLimit.text(limit.soft))")
        case let .failed(error, nil):
            log.warning("daemon", "cannot read the descriptor limit (RLIMIT_NOFILE): \(error)")
        }
    }

    /// `error`'s description, and for running out of descriptors what the limit is:
    /// `Too many open files (EMFILE): the descriptor limit is 1024 (RLIMIT_NOFILE; hard limit
    /// 524288), and every descriptor is in use` (`… in use but the last 16, kept free for the
    /// Swift runtime` with a `DescriptorReserve`).
    static func explain(_ error: Errno) -> String {
        switch error {
        case .tooManyOpenFiles:
            guard let limit = try? ResourceLimit.openFiles() else { return "\(error): the descriptor limit is reached" }
            let size = DescriptorReserve.size
            return "\(error): the descriptor limit is \(ResourceLimit.text(limit.soft)) (RLIMIT_NOFILE; hard limit \(ResourceLimit.text(limit.hard))), "
                + (size == 0 ? "and every descriptor is in use" : "and every descriptor is in use but the last \(size), kept free for the Swift runtime")
        case .tooManyOpenFilesInSystem:
            return "\(error): the system-wide limit on open files (fs.file-max) is reached"
        default:
            return "\(error)"
        }
    }
}
