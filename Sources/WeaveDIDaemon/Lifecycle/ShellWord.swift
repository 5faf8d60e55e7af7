extension String {
    /// The string as one word for a POSIX shell: as it is when every character is one no
    /// shell treats specially (ASCII letters and digits, `@%+=:,./_-`), else in single quotes,
    /// a single quote written `'\''`. `/run/weavedi/control.sock` stays so;
    /// `/tmp/run dir/control.sock` becomes `'/tmp/run dir/control.sock'`.
    package var shellWord: String {
        let plain = !isEmpty && utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: "@%+=:,./_-".utf8.contains(byte)
            }
        }
        guard !plain else { return self }
        return "'" + split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
