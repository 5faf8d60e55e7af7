import Foundation
import Testing
import WeaveDIPosix

/// `--check-config` has no main loop to read the signals the daemon blocks before `main`: it
/// ends by SIGTERM or SIGINT (Ctrl-C) as any command does, 128+N as the shell shows it, rather
/// than go on to its verdict (or, on a configuration of many jobs, for seconds, then exit 0).
@Suite struct CheckConfigSignalTests {
    @Test(arguments: [Signal.terminate, Signal.interrupt])
    func aCheckUnderWay_endsByTheSignal_withoutItsVerdict(signal: Signal) throws {
        let directory = TemporaryDirectory("weavedid-check-signal")
        // The check is held at the open of its configuration file (`WEAVEDI_TEST_HOLD` there),
        // having said so (`WEAVEDI_TEST_REACHED`): the signal comes while it is under way.
        let shim = try PreloadLibrary.holdingOpenat(#"""
            static void hold(const char *path) {
              const char *reached = getenv("WEAVEDI_TEST_REACHED"), *until = getenv("WEAVEDI_TEST_HOLD");
              if (!reached || !until || !strstr(path, "weavedid.json")) return;
              close(creat(reached, 0644));
              struct timespec pause = {0, 10000000};
              for (int i = 0; i < 30000 && access(until, F_OK) == 0; i++) nanosleep(&pause, NULL);
            }
            """#, in: directory)
        let config = directory.write("weavedid.json", #"{"stateDirectory": "\#(directory.path)/state", "sync": {"jobs": []}}"#)
        let hold = directory.write("hold", "")
        let reached = directory.path + "/reached"
        defer { unlink(hold) }
        let check = try DaemonProcess(
            ["--config", config, "--check-config"],
            environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_HOLD": hold, "WEAVEDI_TEST_REACHED": reached], directory: directory)
        let deadline = ContinuousClock.now + .seconds(30)
        while !fileExists(reached), ContinuousClock.now < deadline { usleep(10_000) }
        try #require(fileExists(reached), "\(check.log)")
        check.send(signal)
        // A deadline for "it ended at all", generous for a busy machine, not a speed bound.
        let status = check.wait(timeout: .seconds(10))
        #expect(status == .signaled(signal), "\(check.log)")
        #expect(!check.log.contains("configuration OK"), "\(check.log)")
    }
}
