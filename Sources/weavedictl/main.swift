import Glibc
import WeaveDIDaemon
import WeaveDIPosix

// Before anything opens a descriptor: with standard output closed, the control socket would
// take descriptor 1, and what weavedictl prints would be sent to the daemon.
CurrentProcess.openClosedStandardDescriptors()
if let (index, _) = CurrentProcess.firstArgumentNotUTF8() {
    // The program's own path (index 0) is no argument of weavedictl's: it is said as a path.
    Terminal.error(index == 0
        ? CommandLineOptions.argumentNotUTF8(program: "weavedictl") ?? ""
        : ArgumentReader.notUTF8Message(index: index, arguments: Array(CommandLine.arguments.dropFirst())))
    exit(ExitStatus.usage)
}
let status = await WeaveDICtl.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: CurrentProcess.environment(),
    environmentNotUTF8: CurrentProcess.environmentNotUTF8(),
    workingDirectory: CurrentProcess.workingDirectory() ?? ".", isTerminal: isatty(STDOUT_FILENO) == 1)
exit(status)
