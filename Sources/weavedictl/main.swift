import Glibc
import WeaveDIDaemon
import WeaveDIPosix

if let problem = CommandLineOptions.argumentNotUTF8(program: "weavedictl") {
    Terminal.error(problem)
    exit(ExitStatus.usage)
}
let status = await WeaveDICtl.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: CurrentProcess.environment(),
    workingDirectory: CurrentProcess.workingDirectory() ?? ".", isTerminal: isatty(STDOUT_FILENO) == 1)
exit(status)
