import Glibc
import WeaveDIDaemon
import WeaveDIPosix

// Before anything opens a descriptor: with standard output closed, the control socket would
// take descriptor 1, and what weavedictl prints would be sent to the daemon.
CurrentProcess.openClosedStandardDescriptors()
if let problem = CommandLineOptions.argumentNotUTF8(program: "weavedictl") {
    Terminal.error(problem)
    exit(ExitStatus.usage)
}
// A variable that finds the socket cannot just be left out: another socket would be found.
if !CommandLine.arguments.contains(where: { $0 == "--socket" || $0.hasPrefix("--socket=") }),
    let name = CurrentProcess.environmentNotUTF8().first(where: SocketLocation.environmentNames.contains)
{
    Terminal.error("weavedictl: the environment variable \(name) is not valid UTF-8, and text would turn its path into another path; give the socket with --socket PATH")
    exit(ExitStatus.usage)
}
let status = await WeaveDICtl.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: CurrentProcess.environment(),
    workingDirectory: CurrentProcess.workingDirectory() ?? ".", isTerminal: isatty(STDOUT_FILENO) == 1)
exit(status)
