import WeaveDIDaemon

print("weavedictl \(DaemonVersion.current)")
