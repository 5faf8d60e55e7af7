import WeaveDI

extension JSONValue {
    /// The compact JSON text as UTF-8 bytes: the same bytes as `serialized.utf8`, written
    /// straight into a byte buffer instead of through `String` appends.
    public var serializedBytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// Appends the compact JSON text (the bytes of `serialized`) to `out`.
    public func write(into out: inout [UInt8]) {
        switch self {
        case let .string(s): JSONValue.writeQuoted(s, into: &out)
        case let .int(i): JSONValue.writeInteger(i, into: &out)
        case let .double(d): JSONValue.writeDouble(d, into: &out)
        case let .number(literal): out.append(contentsOf: literal.text.utf8)
        case let .bool(b): out.append(contentsOf: b ? JSONValue.trueBytes : JSONValue.falseBytes)
        case .null: out.append(contentsOf: JSONValue.nullBytes)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(members):
            JSONValue.writeObject(members, into: &out)
        }
    }

    /// Appends `{"key":value,…}` for `members`, in order.
    public static func writeObject(_ members: [(String, JSONValue)], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in members {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeQuoted(key, into: &out)
            out.append(UInt8(ascii: ":"))
            value.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    static let trueBytes: [UInt8] = Array("true".utf8)
    static let falseBytes: [UInt8] = Array("false".utf8)
    static let nullBytes: [UInt8] = Array("null".utf8)
    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `String(i)`, in bytes.
    public static func writeInteger(_ value: Int, into out: inout [UInt8]) {
        var magnitude = value.magnitude
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // 20 digits hold UInt64.max.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = 20
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index..<20]))
        }
    }

    /// `String(d)` for a finite double, `null` otherwise (as `serialized` writes it).
    public static func writeDouble(_ value: Double, into out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: nullBytes)
            return
        }
        var text = value.description
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// `s` as a JSON string: `"`, `\` and control characters escaped (`\n`, `\r`, `\t`, else
    /// `\u00xx`), everything else as its UTF-8 bytes.
    public static func writeQuoted(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { bytes in
            out.reserveCapacity(out.count + bytes.count + 2)
            out.append(UInt8(ascii: "\""))
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case UInt8(ascii: "\n"): out.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): out.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
            out.append(UInt8(ascii: "\""))
        }
    }
}
