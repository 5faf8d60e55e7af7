import WeaveDIDaemon
print("weavedid \(DaemonVersion.current)")
