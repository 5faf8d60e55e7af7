import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The real daemon under a system call filter like systemd's `RestrictSUIDSGID=yes` (which the
/// shipped unit sets): every chmod-family call whose mode has set-user-ID or set-group-ID fails
/// with `EPERM`. A `chmod g+s` source directory and a `chmod u+s` file are mirrored with the
/// rest of their modes, the run succeeds and says once which bits were not kept; the next runs
/// neither fail nor fix those modes again.
@Suite struct MirrorSetIDBitsTests {
    /// A program that installs a seccomp filter refusing, with `EPERM`, `chmod`, `fchmod`,
    /// `fchmodat`, `fchmodat2`, `mkdir`, `mkdirat` and `open`/`openat`/`creat` with `O_CREAT`
    /// whose mode has `06000` (as systemd's `RestrictSUIDSGID=yes` does), then runs its
    /// arguments.
    static let filterSource = seccompWrapper("nosuid", macros: #"""
        /* Syscall NR whose mode is argument A: mode & 06000 fails with EPERM. */
        #define MODE(NR_, A) \
          BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, NR_, 0, 3), \
          BPF_STMT(BPF_LD|BPF_W|BPF_ABS, ARG(A)), \
          BPF_JUMP(BPF_JMP|BPF_JSET|BPF_K, 06000, 0, 1), \
          BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ERRNO|EPERM), \
          BPF_STMT(BPF_LD|BPF_W|BPF_ABS, NR)
        /* Syscall NR with flags in argument F and mode in M: O_CREAT and mode & 06000. */
        #define CREATE(NR_, F, M) \
          BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, NR_, 0, 5), \
          BPF_STMT(BPF_LD|BPF_W|BPF_ABS, ARG(F)), \
          BPF_JUMP(BPF_JMP|BPF_JSET|BPF_K, O_CREAT, 0, 3), \
          BPF_STMT(BPF_LD|BPF_W|BPF_ABS, ARG(M)), \
          BPF_JUMP(BPF_JMP|BPF_JSET|BPF_K, 06000, 0, 1), \
          BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ERRNO|EPERM), \
          BPF_STMT(BPF_LD|BPF_W|BPF_ABS, NR)
        """#, rules: #"""
            MODE(__NR_fchmod, 1), MODE(__NR_fchmodat, 2), MODE(__NR_fchmodat2, 2), MODE(__NR_mkdirat, 2),
            CREATE(__NR_openat, 2, 3),
        #ifdef __NR_chmod
            MODE(__NR_chmod, 1), MODE(__NR_mkdir, 1), CREATE(__NR_open, 1, 2), MODE(__NR_creat, 1),
        #endif
        """#)

    /// The C source of a program `name` that installs a seccomp filter of `rules` (BPF
    /// statements over the call's number, loaded; `macros` may define rule makers over `NR`
    /// and `ARG(n)`, the offsets of the number and of argument n), then runs its arguments:
    /// exit 70 where seccomp cannot be installed, 127 where the program cannot be run.
    static func seccompWrapper(_ name: String, macros: String, rules: String) -> String {
        #"""
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <sys/prctl.h>
        #include <sys/syscall.h>
        #include <stddef.h>
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        #define NR offsetof(struct seccomp_data, nr)
        #define ARG(n) offsetof(struct seccomp_data, args[n])
        #ifndef __NR_fchmodat2
        #define __NR_fchmodat2 452
        #endif
        \#(macros)
        int main(int argc, char **argv) {
          struct sock_filter filter[] = {
            BPF_STMT(BPF_LD|BPF_W|BPF_ABS, NR),
        \#(rules)
            BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ALLOW),
          };
          struct sock_fprog program = { sizeof(filter) / sizeof(filter[0]), filter };
          if (argc < 2) { fprintf(stderr, "usage: \#(name) PROGRAM [ARGUMENT...]\n"); return 64; }
          if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
            perror("\#(name): seccomp");
            return 70;
          }
          execv(argv[1], argv + 1);
          perror("\#(name): exec");
          return 127;
        }
        """#
    }

    /// The filter program, compiled into `directory`; a failure saying why where there is no
    /// C compiler or no seccomp.
    static func filterWrapper(in directory: TemporaryDirectory) throws -> Result<String, SkipReason> {
        let environment = ["PATH": "/usr/local/bin:/usr/bin:/bin"]
        let compilers: [String] = ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang", "/usr/local/bin/cc"]
        guard let compiler = compilers.first(where: { access($0, X_OK) == 0 }) else {
            return .failure(SkipReason(description: "needs a C compiler (cc) to build the seccomp filter"))
        }
        let source = directory.write("nosuid.c", filterSource)
        let program = directory.path + "/nosuid"
        let build = try Subprocess.run(compiler, arguments: ["-O", "-o", program, source], environment: environment)
        guard build.status == .exited(0) else {
            let error = build.standardErrorText.split(separator: "\n").first.map(String.init) ?? "\(build.status)"
            return .failure(SkipReason(description: "cannot build the seccomp filter with \(compiler) (kernel headers missing?): \(error)"))
        }
        // The filter works here: it refuses a set-group-ID chmod, allows the same without it.
        let probe = directory.path + "/probe"
        try FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: false)
        let refused = try Subprocess.run(program, arguments: ["/bin/chmod", "2775", probe], environment: environment)
        if refused.status == .exited(70) {
            return .failure(SkipReason(description: "no seccomp here (\(refused.standardErrorText.trimmingCharacters(in: .whitespacesAndNewlines)))"))
        }
        try #require(refused.status != .exited(0), "the filter let chmod 2775 through")
        try #require(refused.standardErrorText.contains("Operation not permitted"), "\(refused.standardErrorText)")
        let allowed = try Subprocess.run(program, arguments: ["/bin/chmod", "0775", probe], environment: environment)
        try #require(allowed.status == .exited(0), "\(allowed.standardErrorText)")
        return .success(program)
    }

    /// Why the filter cannot be built or does not work here (built once, in a directory of its
    /// own), or nil when it does, or when building it went wrong otherwise (the test then runs
    /// and says how).
    static let filterUnsupportedReason: String? = {
        let scratch = TemporaryDirectory("weavedi-seccomp-probe")
        if case let .failure(reason)? = try? filterWrapper(in: scratch) { return reason.description }
        return nil
    }()

    struct SkipReason: Error, CustomStringConvertible {
        let description: String
    }

    func mode(_ path: String) throws -> UInt32 {
        try FileStatus(path: path, followSymlinks: false).permissions.rawValue
    }

    func changeTime(_ path: String) throws -> TimeSpec {
        try FileStatus(path: path, followSymlinks: false).changeTime
    }

    /// (Parameterized: a test case cancelled is reported passed, so the condition is a trait.)
    @Test(.enabled(if: filterUnsupportedReason == nil, "needs a C compiler and seccomp for the set-ID filter"),
          arguments: ["size-mtime", "checksum"])
    func setIDBitsRefused_areLeftOut_theRestOfTheModeKept_andTheRunSucceedsWithAWarning(compare: String) throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let wrapper: String
        switch try Self.filterWrapper(in: directory) {
        case let .success(program): wrapper = program
        case let .failure(reason):
            try Test.cancel("\(reason)")
        }
        directory.write("source/shared/a.txt", "a")
        directory.write("source/tool", "#!/bin/sh\n")
        #expect(chmod(d + "/source/shared", 0o2775) == 0)
        #expect(chmod(d + "/source/tool", 0o4755) == 0)
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: false)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600,
              "compare": "\(compare)"}]}}
            """)
        func start() throws -> DaemonProcess {
            let daemon = try DaemonProcess(
                ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory, wrapper: [wrapper])
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }
        func run(_ daemon: DaemonProcess) throws -> JSONValue? {
            try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        }
        let notice = "set-user/group-ID bits not kept on 2 item(s) (first: "
        let reason = "): this process may not set them (RestrictSUIDSGID=yes in the unit?; and the kernel clears set-group-ID "
            + "on a copy whose group the daemon's user is not in); the rest of their modes is the source's (to keep the bits "
            + "too, set RestrictSUIDSGID=no in a drop-in, or add the daemon's user to the copy's group)"

        var daemon = try start()
        let first = try run(daemon)
        #expect(first?[member: "result"]?.stringValue == "success", "\(String(describing: first))\n\(daemon.log)")
        #expect(first?[member: "filesCopied"]?.intValue == 2)
        let message = first?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix(notice) && message.hasSuffix(reason), "\(message)")
        #expect(message.contains("(first: \"shared\")") || message.contains("(first: \"tool\")"), "\(message)")
        #expect(daemon.log.contains("warning sync: docs: \(notice)"), "\(daemon.log)")
        #expect(try mode(d + "/mirror/shared") == 0o775)
        #expect(try mode(d + "/mirror/tool") == 0o755)
        #expect(directory.read("mirror/shared/a.txt") == "a")

        // Nothing changed: nothing is fixed again (a chmod, even to the same mode, would move
        // the ctime), and the warning is repeated.
        let times = (try changeTime(d + "/mirror/shared"), try changeTime(d + "/mirror/tool"))
        usleep(20_000)  // past the file system's clock tick, so that a chmod would show
        let second = try run(daemon)
        #expect(second?[member: "result"]?.stringValue == "success", "\(String(describing: second))")
        #expect(second?[member: "filesUpdated"]?.intValue == 0)
        #expect(second?[member: "message"]?.stringValue?.hasPrefix(notice) == true, "\(String(describing: second))")
        #expect(try changeTime(d + "/mirror/shared") == times.0)
        #expect(try changeTime(d + "/mirror/tool") == times.1)

        // A new process learns the refusal again: its first run finds the modes as good as
        // they get, updates nothing, and says so too.
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        daemon = try start()
        let third = try run(daemon)
        #expect(third?[member: "result"]?.stringValue == "success", "\(String(describing: third))\n\(daemon.log)")
        #expect(third?[member: "filesUpdated"]?.intValue == 0)
        #expect(third?[member: "message"]?.stringValue?.hasPrefix(notice) == true, "\(String(describing: third))")
        #expect(try mode(d + "/mirror/shared") == 0o775)
        #expect(try mode(d + "/mirror/tool") == 0o755)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
