#if canImport(Glibc)
import Glibc
#endif
import CWeaveDIEarlySignals
import WeaveDIDaemon

// The handled signals were blocked by a constructor before main (CWeaveDIEarlySignals);
// prepareProcess() does it again for builds where constructors do not run first.
precondition(weavedi_signals_blocked_early(), "weavedid: signals were not blocked before main")
DaemonMain.prepareProcess()
if let problem = CommandLineOptions.argumentNotUTF8(program: "weavedid") {
    // As any usage error: the synopsis and where the help is, not the whole help.
    DaemonMain.printError(problem + "\n" + CommandLineOptions.usageHint)
    exit(DaemonMain.exitUsage)
}
exit(DaemonMain.run(arguments: CommandLine.arguments))
