import WeaveDIControl

/// Calls `Reload` over the socket at `path`: the error reply it got (`ReloadRefused`, …), or nil
/// when the reload was applied. A failure to connect or a reply that is no varlink reply throws.
func reloadFailure(_ path: String) throws -> VarlinkFailure? {
    do {
        _ = try VarlinkClient(path: path).call("io.weavedi.Daemon.Reload")
        return nil
    } catch let failure as VarlinkFailure {
        return failure
    }
}
