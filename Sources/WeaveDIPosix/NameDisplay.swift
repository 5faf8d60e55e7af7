/// How a name that is not valid UTF-8 is shown: its UTF-8 parts as they are, each byte that is
/// no part of a UTF-8 sequence as `\xFF` (two uppercase hex digits), and a backslash as `\\`,
/// so that in such a display `\xFF` stands for that byte: `bad\xFFname` for the bytes
/// `b a d 0xFF n a m e`. A name that is valid UTF-8 is shown as it is, backslashes and all, so
/// a valid name whose text is `bad\xFFname` reads the same: the display does not say which of
/// the two it is (the message beside it does, `the name is not valid UTF-8`). The text is for
/// people (the log, a run's failed items); it names no file, and must not be used to open one.
public enum NameDisplay {
    /// The display of `bytes` (a name, without its NUL), escaped as the type says.
    public static func escaping(_ bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var shown = ""
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let length = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0
            if length > 0, index + length <= bytes.count,
                let scalar = String(validating: bytes[index..<index + length], as: UTF8.self)
            {
                shown += scalar == "\\" ? "\\\\" : scalar
                index += length
            } else {
                shown += "\\x" + String(lead >> 4, radix: 16, uppercase: true) + String(lead & 0x0F, radix: 16, uppercase: true)
                index += 1
            }
        }
        return shown
    }
}
