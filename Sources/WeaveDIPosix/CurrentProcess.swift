import Glibc

/// Identity and environment of the calling process.
public enum CurrentProcess {
    /// The process id (`getpid(2)`).
    public static var id: Int32 { getpid() }
    /// The parent's process id (`getppid(2)`).
    public static var parentID: Int32 { getppid() }
    /// The real user id (`getuid(2)`).
    public static var userID: UInt32 { getuid() }
    /// The effective user id (`geteuid(2)`).
    public static var effectiveUserID: UInt32 { geteuid() }
    /// The real group id (`getgid(2)`).
    public static var groupID: UInt32 { getgid() }
    /// The effective group id (`getegid(2)`).
    public static var effectiveGroupID: UInt32 { getegid() }

    /// The supplementary group ids (`getgroups(2)`), which may or may not include the effective gid.
    public static func supplementaryGroups() throws(Errno) -> [UInt32] {
        while true {
            let count = try valueOrErrno { getgroups(0, nil) }
            var groups = [gid_t](repeating: 0, count: Int(count))
            do {
                let filled = try groups.withUnsafeMutableBufferPointer { (buffer) throws(Errno) -> Int32 in
                    try valueOrErrno { getgroups(Int32(buffer.count), buffer.baseAddress) }
                }
                return Array(groups.prefix(Int(filled)))
            } catch .invalidArgument {
                continue  // the group list grew between the two calls
            }
        }
    }

    /// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed, and returns their
    /// numbers. A program started with one of them closed would otherwise hand that number to
    /// the next descriptor it opens (a socket, a file being written), and whatever it then
    /// prints or logs would go there. Call first thing in `main`, before anything opens a
    /// descriptor. Where `/dev/null` cannot be opened, the descriptor stays closed.
    @discardableResult
    public static func openClosedStandardDescriptors() -> [Int32] {
        var opened: [Int32] = []
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // The lowest free number is this one: those below it are open by now.
            let null = Glibc.open("/dev/null", O_RDWR | O_NOCTTY)
            guard null >= 0 else { break }
            if null != descriptor {
                // Cannot happen (see above); never leave a stray descriptor behind.
                close(null)
                break
            }
            opened.append(descriptor)
        }
        return opened
    }

    /// Whether the process is a member of group `gid`, as effective or supplementary group.
    public static func isMember(ofGroup gid: UInt32) throws(Errno) -> Bool {
        if effectiveGroupID == gid { return true }
        return try supplementaryGroups().contains(gid)
    }

    /// The environment as a dictionary; for duplicate names the first occurrence wins, as in
    /// `getenv`. A variable that is not valid UTF-8 is left out (`environmentNotUTF8()` names
    /// it): as text, a path in it would name another path.
    public static func environment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            defer { pointer += 1 }
            guard let text = String(validatingCString: entry) else { continue }
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if result[name] == nil {
                    result[name] = String(text[text.index(after: equals)...])
                }
            }
        }
        return result
    }

    /// The names of the environment variables that `environment()` leaves out for not being
    /// valid UTF-8 (their invalid bytes shown as U+FFFD).
    public static func environmentNotUTF8() -> [String] {
        var names: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            defer { pointer += 1 }
            guard String(validatingCString: entry) == nil else { continue }
            let text = String(cString: entry)
            names.append(String(text.prefix { $0 != "=" }))
        }
        return names
    }

    /// The first command-line argument (`argv`, the program at 0) that is not valid UTF-8,
    /// with the text `CommandLine.arguments` makes of it: its bad bytes replaced by U+FFFD,
    /// which turns a path into another path. Nil when every argument is valid UTF-8.
    public static func firstArgumentNotUTF8() -> (index: Int, repaired: String)? {
        for index in 0..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            if String(validatingCString: argument) == nil { return (index, String(cString: argument)) }
        }
        return nil
    }

    /// One environment variable (`getenv(3)`), or `nil` when unset.
    public static func environmentValue(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// Removes an environment variable (`unsetenv(3)`), as `sd_notify` does with `NOTIFY_SOCKET`.
    /// Not thread-safe with concurrent `getenv` in other threads: call it early in `main`.
    public static func removeEnvironmentValue(_ name: String) throws(Errno) {
        try nothingOrErrno { unsetenv(name) }
    }
}

extension CurrentProcess {
    /// The current working directory (`getcwd(3)`), or nil if it cannot be read or is not
    /// valid UTF-8 (as text it would name another directory: use relative paths then, which
    /// the kernel resolves from the directory itself).
    public static func workingDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(validating: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Sets the file mode creation mask (`umask(2)`); returns the previous mask.
    @discardableResult
    public static func setUmask(_ mask: UInt32) -> UInt32 {
        UInt32(umask(mode_t(mask)))
    }
}
