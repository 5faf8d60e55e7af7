import WeaveDI

/// A varlink error reply: a qualified error name and its parameters.
public struct VarlinkFailure: Error, Sendable, CustomStringConvertible {
    /// The error name, e.g. `org.varlink.service.MethodNotFound`.
    public var name: String
    /// Its parameters.
    public var parameters: [(String, JSONValue)]

    /// A failure.
    public init(_ name: String, _ parameters: [(String, JSONValue)] = []) {
        self.name = name
        self.parameters = parameters
    }

    /// The reply that carries it.
    public var reply: VarlinkReply { VarlinkReply(parameters: parameters, error: name) }

    /// `name {parameters}`.
    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSONValue.object(parameters).serialized)"
    }

    /// The `reason` or `message` parameter, if any.
    public var reason: String? {
        parameters.first { $0.0 == "reason" || $0.0 == "message" }?.1.stringValue
    }

    // MARK: org.varlink.service errors

    /// The interface is not served.
    public static func interfaceNotFound(_ interface: String) -> VarlinkFailure {
        VarlinkFailure("org.varlink.service.InterfaceNotFound", [("interface", .string(interface))])
    }

    /// The method does not exist.
    public static func methodNotFound(_ method: String) -> VarlinkFailure {
        VarlinkFailure("org.varlink.service.MethodNotFound", [("method", .string(method))])
    }

    /// The method exists but is not implemented.
    public static func methodNotImplemented(_ method: String) -> VarlinkFailure {
        VarlinkFailure("org.varlink.service.MethodNotImplemented", [("method", .string(method))])
    }

    /// A parameter is missing, of the wrong type or out of range; `reason`, if given, says what
    /// is allowed (`expected an integer from 1 to 500, got 1000000`). Varlink's interface names
    /// only `parameter`; clients ignore the members they do not know.
    public static func invalidParameter(_ parameter: String, reason: String? = nil) -> VarlinkFailure {
        var parameters: [(String, JSONValue)] = [("parameter", .string(parameter))]
        if let reason { parameters.append(("reason", .string(reason))) }
        return VarlinkFailure("org.varlink.service.InvalidParameter", parameters)
    }

    /// The call needs `more`.
    public static func expectedMore() -> VarlinkFailure {
        VarlinkFailure("org.varlink.service.ExpectedMore")
    }

    /// The message itself is malformed (not JSON, not a call). Reported as `InvalidParameter`
    /// naming the offending part, the closest standard error, with a `reason`.
    public static func invalidMessage(_ reason: String) -> VarlinkFailure {
        VarlinkFailure("org.varlink.service.InvalidParameter", [("parameter", .string("message")), ("reason", .string(reason))])
    }
}
