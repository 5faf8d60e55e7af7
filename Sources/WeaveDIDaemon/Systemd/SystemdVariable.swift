/// The environment variables systemd passes (`LISTEN_*`, `WATCHDOG_*`), read strictly and
/// quoted alike in the problems found with them.
enum SystemdVariable {
    /// `NAME="value"`; a value longer than 40 characters is cut short, with its length, so that
    /// a variable of a megabyte makes no line of a megabyte.
    static func quoted(_ name: String, _ value: String) -> String {
        value.count > 40 ? "\(name)=\"\(value.prefix(40))…\" (\(value.utf8.count) bytes)" : "\(name)=\"\(value)\""
    }

    /// Whether `text` is decimal digits only (no sign, no space), as systemd writes numbers.
    static func isDecimal(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
