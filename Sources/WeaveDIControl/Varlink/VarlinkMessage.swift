import WeaveDI

/// A varlink call: `{"method":"iface.Method","parameters":{…},"oneway":true,"more":true}`.
public struct VarlinkCall: Sendable, Equatable {
    /// The fully qualified method name.
    public var method: String
    /// The parameters object's members.
    public var parameters: [(String, JSONValue)]
    /// The caller wants no reply.
    public var oneway: Bool
    /// The caller accepts several replies (`continues`).
    public var more: Bool
    /// The caller asks to upgrade the connection to another protocol (unsupported here).
    public var upgrade: Bool

    /// A call.
    public init(method: String, parameters: [(String, JSONValue)] = [], oneway: Bool = false, more: Bool = false, upgrade: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
        self.upgrade = upgrade
    }

    /// The parameter `name`, if present and not null.
    public func parameter(_ name: String) -> JSONValue? {
        guard let value = parameters.first(where: { $0.0 == name })?.1, !value.isNull else { return nil }
        return value
    }

    /// The most JSON values one call may hold (`JSONLimits.maxValues`): what the daemon's
    /// decoding allows. The largest call of its interfaces is a `tags` list of `GetHealth` or
    /// `RunChecks` (strings naming tags that checks have: a handful; a configuration has 4,096
    /// jobs at most), a few values beside it: no real call comes near. Bounded by the message
    /// size alone (1 MiB by default), a call held 240,000 (`"tags":[0,0,…]`), whose parse took
    /// 55 to 110 ms on the I/O thread every connection waits on; one of 16,384 takes well under
    /// a millisecond (the time per value grows once a container holds tens of thousands).
    public static let maximumValues = 16_384

    /// The limits a call is decoded within by default: `maximumValues`, and `JSONLimits`'
    /// defaults for the rest.
    public static let defaultLimits = JSONLimits(maxValues: maximumValues)

    /// Decodes a message (without its NUL); the error is a varlink error to send back.
    public static func decode(_ bytes: [UInt8], limits: JSONLimits = defaultLimits) throws(VarlinkFailure) -> VarlinkCall {
        try bytes.withUnsafeBufferPointer { (buffer) throws(VarlinkFailure) in try decode(buffer, limits: limits) }
    }

    /// Decodes a message (without its NUL) in place; the error is a varlink error to send back.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits = defaultLimits) throws(VarlinkFailure) -> VarlinkCall {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes, limits: limits) } catch {
            throw VarlinkFailure.invalidMessage("not a valid JSON object: \(error)")
        }
        guard let members = value.objectMembers else {
            throw VarlinkFailure.invalidMessage("a call is a JSON object, got \(value.typeName)")
        }
        var call = VarlinkCall(method: "")
        for (key, member) in members {
            switch key {
            case "method":
                guard let method = member.stringValue else {
                    throw VarlinkFailure.invalidMessage("\"method\" must be a string like \"io.weavedi.Daemon.Ping\", got \(member.typeName)")
                }
                if let problem = VarlinkName.qualifiedMethodProblem(method) {
                    throw VarlinkFailure.invalidMessage("\"method\" must be an interface name and a method name joined by a dot, "
                        + "such as \"io.weavedi.Daemon.Ping\": \(problem)")
                }
                call.method = method
            case "parameters":
                if member.isNull { continue }
                guard let object = member.objectMembers else {
                    throw VarlinkFailure.invalidMessage("\"parameters\" must be an object, got \(member.typeName)")
                }
                call.parameters = object
            case "oneway", "more", "upgrade":
                if member.isNull { continue }
                guard let flag = member.boolValue else {
                    throw VarlinkFailure.invalidMessage("\"\(key)\" must be a boolean, got \(member.typeName)")
                }
                if key == "oneway" { call.oneway = flag } else if key == "more" { call.more = flag } else { call.upgrade = flag }
            default:
                throw VarlinkFailure.invalidMessage("unknown field \(JSONValue.quotedForMessage(key)) in a call (method, parameters, oneway, more, upgrade)")
            }
        }
        guard !call.method.isEmpty else { throw VarlinkFailure.invalidMessage("a call needs a \"method\"") }
        return call
    }

    /// The message bytes, without the NUL terminator.
    public func encoded() -> [UInt8] {
        var members: [(String, JSONValue)] = [("method", .string(method))]
        if !parameters.isEmpty { members.append(("parameters", .object(parameters))) }
        if oneway { members.append(("oneway", .bool(true))) }
        if more { members.append(("more", .bool(true))) }
        return JSONValue.object(members).serializedBytes
    }

    public static func == (lhs: VarlinkCall, rhs: VarlinkCall) -> Bool {
        lhs.encoded() == rhs.encoded()
    }
}

/// A varlink reply: `{"parameters":{…},"continues":true}` or `{"error":"iface.Error","parameters":{…}}`.
public struct VarlinkReply: Sendable, Equatable {
    /// The reply's parameters.
    public var parameters: [(String, JSONValue)]
    /// More replies follow (only for calls with `more`).
    public var continues: Bool
    /// The error name, for an error reply.
    public var error: String?

    /// A reply.
    public init(parameters: [(String, JSONValue)] = [], continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// The parameter `name`, if present and not null.
    public func parameter(_ name: String) -> JSONValue? {
        guard let value = parameters.first(where: { $0.0 == name })?.1, !value.isNull else { return nil }
        return value
    }

    /// The message bytes, without the NUL terminator.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// Appends the message bytes (without the NUL terminator) to `out`.
    public func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let error {
            out.append(contentsOf: Self.errorKey)
            JSONValue.writeQuoted(error, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: Self.parametersKey)
        JSONValue.writeObject(parameters, into: &out)
        if continues { out.append(contentsOf: Self.continuesMember) }
        out.append(UInt8(ascii: "}"))
    }

    private static let errorKey: [UInt8] = Array(#""error":"#.utf8)
    private static let parametersKey: [UInt8] = Array(#""parameters":"#.utf8)
    private static let continuesMember: [UInt8] = Array(#","continues":true"#.utf8)

    /// Decodes a reply (without its NUL). Members of the wrong type are refused rather than
    /// read as missing: an `error` that is not a string would otherwise make a failure a
    /// success. Members the reply format does not have are ignored, as varlink asks.
    public static func decode(_ bytes: [UInt8]) throws(VarlinkFailure) -> VarlinkReply {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw VarlinkFailure.invalidMessage("the reply is not valid JSON: \(error)")
        }
        guard value.objectMembers != nil else {
            throw VarlinkFailure.invalidMessage("a reply is a JSON object, got \(value.typeName)")
        }
        var reply = VarlinkReply()
        if let member = value[member: "parameters"], !member.isNull {
            guard let parameters = member.objectMembers else {
                throw VarlinkFailure.invalidMessage("\"parameters\" must be an object, got \(member.typeName)")
            }
            reply.parameters = parameters
        }
        if let member = value[member: "continues"], !member.isNull {
            guard let continues = member.boolValue else {
                throw VarlinkFailure.invalidMessage("\"continues\" must be a boolean, got \(member.typeName)")
            }
            reply.continues = continues
        }
        if let member = value[member: "error"], !member.isNull {
            guard let error = member.stringValue else {
                throw VarlinkFailure.invalidMessage("\"error\" must be a string, got \(member.typeName)")
            }
            reply.error = error
        }
        return reply
    }

    public static func == (lhs: VarlinkReply, rhs: VarlinkReply) -> Bool {
        lhs.encoded() == rhs.encoded()
    }
}
