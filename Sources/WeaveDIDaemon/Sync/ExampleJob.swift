import WeaveDI
import WeaveDIPosix

/// The built-in default's example job mirrors `.weavedi/example/source`; on a fresh machine
/// that directory does not exist yet, so the daemon creates it with a few files.
enum ExampleJob {
    static func prepare(_ configuration: DaemonConfiguration, log: DaemonLog) {
        guard let mirror = configuration.sync.jobs.first(where: { $0.name == "example" })?.mirror else { return }
        makeDirectories(mirror.destination)
        let source = mirror.source
        guard (try? FileStatus(path: source, followSymlinks: false)) == nil else { return }
        makeDirectories(source)
        try? FileDescriptor.currentWorkingDirectory.makeDirectory(at: source + "/notes", permissions: 0o755)
        let files = [
            "README.txt": "This directory is the source of weavedid's example mirror job.\nEdit, add or remove files here and watch .weavedi/example/mirror follow.\n",
            "notes/hello.txt": "Hello from WeaveDI.\n",
        ]
        for (name, text) in files {
            try? AtomicFile.write(Array(text.utf8), to: source + "/" + name, permissions: 0o644, durable: false)
        }
        log.info("sync", "created the example job's source \(JSONValue.quotedPathForMessage(source))")
    }

    private static func makeDirectories(_ path: String) {
        try? FileDescriptor.currentWorkingDirectory.makeDirectories(at: path, permissions: 0o755)
    }
}
