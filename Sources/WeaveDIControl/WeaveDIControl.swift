/// What `weavedid` and `weavedictl` share: JSON parsing and the control protocol.
public enum WeaveDIControl {
    /// The protocol's interface name.
    public static let interface = "io.weavedi.Daemon"
}
