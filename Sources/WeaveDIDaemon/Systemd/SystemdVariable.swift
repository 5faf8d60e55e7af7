import WeaveDI
import WeaveDIControl

/// The environment variables systemd passes (`LISTEN_*`, `WATCHDOG_*`, `NOTIFY_SOCKET`), read
/// strictly and quoted alike in the problems found with them.
enum SystemdVariable {
    /// `NAME="value"`, the value written as a JSON string (a quote or a control character in it
    /// escaped) and, past 60 Unicode scalars, cut short with its length
    /// (`JSONValue.quotedForMessage`): a variable of 128 KiB makes no line of 128 KiB, even one
    /// that is a single character of many combining scalars.
    static func quoted(_ name: String, _ value: String) -> String {
        "\(name)=\(JSONValue.quotedForMessage(value))"
    }

    /// Whether `text` is decimal digits only (no sign, no space), as systemd writes numbers.
    static func isDecimal(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
