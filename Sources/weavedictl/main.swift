import Glibc
import WeaveDIPosix

let status = await WeaveDICtl.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: CurrentProcess.environment(),
    workingDirectory: CurrentProcess.workingDirectory() ?? ".", isTerminal: isatty(STDOUT_FILENO) == 1)
exit(status)
