import Glibc
import WeaveDIDaemon
import WeaveDIPosix

// Before anything opens a descriptor: with standard output closed, the control socket would
// take descriptor 1, and what weavedictl prints would be sent to the daemon.
CurrentProcess.openClosedStandardDescriptors()
if let (index, repaired) = CurrentProcess.firstArgumentNotUTF8() {
    Terminal.error(ArgumentReader.notUTF8Message(index: index, repaired: repaired, arguments: Array(CommandLine.arguments.dropFirst())))
    exit(ExitStatus.usage)
}
let status = await WeaveDICtl.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: CurrentProcess.environment(),
    environmentNotUTF8: CurrentProcess.environmentNotUTF8(),
    workingDirectory: CurrentProcess.workingDirectory() ?? ".", isTerminal: isatty(STDOUT_FILENO) == 1)
exit(status)
