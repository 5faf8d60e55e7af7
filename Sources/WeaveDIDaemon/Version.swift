/// The daemon's version, as `weavedid --version` prints it.
public enum DaemonVersion {
    /// The version string.
    public static let current = "0.1.0"
}
