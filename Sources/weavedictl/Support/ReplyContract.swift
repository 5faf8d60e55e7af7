import WeaveDI
import WeaveDIControl

/// What a reply of `io.weavedi.Daemon` must hold, read from the interface description the
/// daemon serves (`DaemonInterface.description`): every member without `?` must be there, and
/// every member there of its type, down to the checks of a `Health` and the runs of a `Job`.
/// `CtlContext.perform` checks each reply with it before a subcommand reads it, so that a reply
/// that lacks what the daemon always sends is said to be no valid reply (exit 69) instead of
/// being read as empty results (`No issues`, `healthy`, exit 0). Members the interface does not
/// name are let through, as a newer daemon may add them.
struct ReplyContract: Sendable {
    /// A type of varlink's interface language.
    indirect enum Shape: Equatable, Sendable {
        case bool, int, float, string, object
        /// A `type` of the interface, by name.
        case named(String)
        /// `?T`: null or absent, or a T.
        case optional(Shape)
        /// `[]T`.
        case array(Shape)
        /// `[string]T`.
        case map(Shape)
        /// `(name: T, ...)`.
        case fields([Field])
        /// `(a, b, c)`: one of these strings.
        case choice([String])
    }

    /// A member of a struct type.
    struct Field: Equatable, Sendable {
        let name: String
        let shape: Shape
    }

    /// What a member must be beyond its type (a `Ping`'s pid positive, a health status one of
    /// three), in words for the message; or that it may be absent although the interface says
    /// it is always sent, for a daemon older than the member (documented where it is allowed).
    struct Rule: Sendable {
        /// What the value must be (`a positive integer`), instead of its type's words.
        var description: String?
        /// Whether a value of the right type is valid.
        var accepts: @Sendable (JSONValue) -> Bool = { _ in true }
        /// Whether the member may be absent.
        var mayBeAbsent = false
        /// Whether the member is one of some strings (`oneOf`): another string is a value
        /// weavedictl does not know, not a value of the wrong kind.
        var namesValues = false

        /// One of `values`: `"healthy", "degraded" or "unhealthy"`.
        static func oneOf(_ values: [String]) -> Rule {
            let quoted = values.map { "\"\($0)\"" }
            let words = quoted.count < 2 ? quoted.joined() : quoted.dropLast().joined(separator: ", ") + " or " + quoted[quoted.count - 1]
            return Rule(description: words, accepts: { $0.stringValue.map(values.contains) ?? false }, namesValues: true)
        }
    }

    /// What is wrong with a reply.
    struct Problem: Equatable, Sendable {
        /// The first member missing or invalid, by its path (`"health.checks[2].status" must
        /// be …, got …`).
        let text: String
        /// Whether the reply is whole, each member of its type, and only strings that must be one
        /// of some names (an enum, a status) are none weavedictl knows: what a daemon of
        /// another version may send (a newer one may add a status), not what some other
        /// service would.
        let onlyUnknownNames: Bool
    }

    /// The `type`s of the interface, by name.
    let types: [String: Shape]
    /// The members of each method's reply, by the method's short name (`Ping`).
    let replies: [String: [Field]]
    /// Rules for the members of a type, by the type's name, then the member's.
    let typeRules: [String: [String: Rule]]
    /// Rules for the members of a method's reply, by the method's short name, then the member's.
    let replyRules: [String: [String: Rule]]

    /// The contract of weavedid's interface, with the rules its description cannot say.
    static let daemon: ReplyContract = {
        let statuses = Rule.oneOf(HealthStatus.allCases.map(\.rawValue))
        return ReplyContract(
            description: DaemonInterface.description,
            typeRules: [
                "Health": [
                    "status": statuses,
                    "score": Rule(description: "an integer from 0 to 100") { $0.wholeNumber.map((0...100).contains) ?? false },
                ],
                // null while the check has not run yet (`pending`).
                "Check": ["status": statuses],
            ],
            replyRules: [
                "Ping": [
                    "pid": Rule(description: "a positive integer") { ($0.wholeNumber ?? 0) > 0 },
                    "uptime": Rule(description: "a number of seconds, 0 or more") { ($0.numberValue ?? -1) >= 0 },
                ],
                // A daemon older than `notBuilt` does not send it (check-cycles then leaves it out).
                "CheckCycles": ["notBuilt": Rule(mayBeAbsent: true)],
            ])
    }()

    /// The contract of the interface `description`, with `typeRules` and `replyRules`. The
    /// description is weavedictl's own (it is the daemon's, compiled in): one it cannot read is
    /// a mistake in the program.
    init(description: String, typeRules: [String: [String: Rule]] = [:], replyRules: [String: [String: Rule]] = [:]) {
        var parser = Parser(description)
        var types: [String: Shape] = [:]
        var replies: [String: [Field]] = [:]
        while let keyword = parser.next() {
            switch keyword {
            case "interface":
                _ = parser.name()
            case "type":
                let name = parser.name()
                types[name] = parser.members()
            case "method":
                let name = parser.name()
                _ = parser.members()
                parser.expect("->")
                guard case let .fields(fields) = parser.members() else { preconditionFailure("method \(name) has no reply struct") }
                replies[name] = fields
            case "error":
                _ = parser.name()
                _ = parser.members()
            default:
                preconditionFailure("unexpected \(keyword) in the interface description")
            }
        }
        self.types = types
        self.replies = replies
        self.typeRules = typeRules
        self.replyRules = replyRules
    }

    /// What is wrong with `parameters`, a reply to `method` (its short name), or nil: the first
    /// member missing or invalid, by its path (`"health.checks[2].status" must be …, got …`).
    /// A method the description does not have is not checked.
    func problem(inReplyTo method: String, _ parameters: JSONValue) -> String? {
        check(parameters, inReplyTo: method)?.text
    }

    /// What is wrong with `parameters`, a reply to `method` (its short name), or nil: the first
    /// member missing or invalid (`problem(inReplyTo:_:)`), and whether the reply is whole but
    /// for names weavedictl does not know.
    func check(_ parameters: JSONValue, inReplyTo method: String) -> Problem? {
        guard let fields = replies[method] else { return nil }
        guard parameters.objectMembers != nil else {
            return Problem(text: "the parameters must be an object, got \(parameters.typeName)", onlyUnknownNames: false)
        }
        let rules = replyRules[method] ?? [:]
        guard let first = problem(in: parameters, fields, rules: rules, at: "", knownNamesOnly: true) else { return nil }
        // Read again with any string taken for a name: nothing else wrong, the reply is whole.
        let whole = problem(in: parameters, fields, rules: rules, at: "", knownNamesOnly: false) == nil
        return Problem(text: first, onlyUnknownNames: whole)
    }

    /// What is wrong with the member `key` of a reply to `method` that the caller needs
    /// although the interface lets it be null or absent (the `run` of RunJob's last reply), or
    /// nil when it is there. `unless` names a member that would have done instead.
    func missing(_ key: String, inReplyTo method: String, _ parameters: JSONValue, unless other: String? = nil) -> String? {
        guard let value = parameters[member: key], !value.isNull else {
            let shape = replies[method]?.first { $0.name == key }?.shape ?? .object
            let wanted = words(for: shape.required, rule: nil) + (other.map { " when there is no \"\($0)\"" } ?? "")
            return "\"\(key)\" must be \(wanted), " + (parameters[member: key] == nil ? "it is missing" : "got null")
        }
        return nil
    }

    /// The first problem among `fields` of `object`, whose path is `path`. Without
    /// `knownNamesOnly`, a string where one of some names must be is taken, whatever it is.
    private func problem(in object: JSONValue, _ fields: [Field], rules: [String: Rule], at path: String, knownNamesOnly: Bool) -> String? {
        for field in fields {
            let memberPath = path.isEmpty ? field.name : path + "." + field.name
            let rule = rules[field.name]
            guard let value = object[member: field.name] else {
                if case .optional = field.shape { continue }
                if rule?.mayBeAbsent == true { continue }
                return "\"\(memberPath)\" must be \(words(for: field.shape, rule: rule)), it is missing"
            }
            if let problem = problem(in: value, field.shape, rule: rule, at: memberPath, knownNamesOnly: knownNamesOnly) { return problem }
        }
        return nil
    }

    /// What is wrong with `value`, of `shape`, at `path`, or nil.
    private func problem(in value: JSONValue, _ shape: Shape, rule: Rule?, at path: String, knownNamesOnly: Bool) -> String? {
        // The message says what the member must be as a whole: `… or null` for an optional one.
        func invalid(rightType: Bool) -> String {
            "\"\(path)\" must be \(words(for: shape, rule: rule)), got \(Self.shown(value, rightType: rightType))"
        }
        var inner = shape
        if case let .optional(wrapped) = shape {
            if value.isNull { return nil }
            inner = wrapped
        }
        switch inner {
        case .optional: preconditionFailure("??T is no varlink type")
        case .bool: if value.boolValue == nil { return invalid(rightType: false) }
        case .int: if value.wholeNumber == nil { return invalid(rightType: false) }
        case .float: if value.numberValue == nil { return invalid(rightType: false) }
        case .string: if value.stringValue == nil { return invalid(rightType: false) }
        case .object: if value.objectMembers == nil { return invalid(rightType: false) }
        case let .choice(names):
            if !(value.stringValue.map { names.contains($0) || !knownNamesOnly } ?? false) { return invalid(rightType: value.stringValue != nil) }
        case let .named(name):
            guard let type = types[name] else { preconditionFailure("type \(name) is not in the interface description") }
            // A varlink type is a struct or an enum.
            switch type {
            case let .fields(fields):
                guard value.objectMembers != nil else { return invalid(rightType: false) }
                if let problem = problem(in: value, fields, rules: typeRules[name] ?? [:], at: path, knownNamesOnly: knownNamesOnly) {
                    return problem
                }
            case let .choice(names):
                if !(value.stringValue.map { names.contains($0) || !knownNamesOnly } ?? false) {
                    return invalid(rightType: value.stringValue != nil)
                }
            default: preconditionFailure("type \(name) is neither a struct nor an enum")
            }
        case let .fields(fields):
            guard value.objectMembers != nil else { return invalid(rightType: false) }
            if let problem = problem(in: value, fields, rules: [:], at: path, knownNamesOnly: knownNamesOnly) { return problem }
        case let .array(element):
            guard let elements = value.arrayValue else { return invalid(rightType: false) }
            for (index, item) in elements.enumerated() {
                if let problem = problem(in: item, element, rule: nil, at: "\(path)[\(index)]", knownNamesOnly: knownNamesOnly) { return problem }
            }
        case let .map(element):
            guard let members = value.objectMembers else { return invalid(rightType: false) }
            for (key, item) in members {
                let at = "\(path)[\(JSONValue.quotedForMessage(key))]"
                if let problem = problem(in: item, element, rule: nil, at: at, knownNamesOnly: knownNamesOnly) { return problem }
            }
        }
        if let rule, !rule.accepts(value), knownNamesOnly || !rule.namesValues || value.stringValue == nil { return invalid(rightType: true) }
        return nil
    }

    /// What a value of `shape` is, in words: `an integer`, `a Check object`, `an array`,
    /// `a string or null`; the rule's words instead of the type's when it has some.
    private func words(for shape: Shape, rule: Rule?) -> String {
        if case let .optional(wrapped) = shape { return words(for: wrapped, rule: rule) + " or null" }
        if let description = rule?.description { return description }
        switch shape {
        case .optional: preconditionFailure("handled above")
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .float: return "a number"
        case .string: return "a string"
        case .object, .fields, .map: return "an object"
        case let .named(name):
            if case let .choice(names)? = types[name] { return Rule.oneOf(names).description ?? "" }
            return "a \(name) object"
        case .array: return "an array"
        case let .choice(names): return Rule.oneOf(names).description ?? ""
        }
    }

    /// A value in a message: a number as written (shortened past 40 characters), a string of
    /// the right type but not valid quoted (shortened past 60), anything else by its type.
    private static func shown(_ value: JSONValue, rightType: Bool) -> String {
        switch value {
        case .int, .double: value.serialized
        case let .number(literal): JSONValue.shownForMessage(literal)
        case let .string(text) where rightType: JSONValue.quotedForMessage(text)
        default: value.typeName
        }
    }

    /// Reads the interface language: names, `(`, `)`, `:`, `,`, `?`, `[`, `]` and `->`, the
    /// comments (`#` to the end of a line) left out.
    private struct Parser {
        private var tokens: [String] = []
        private var index = 0

        init(_ text: String) {
            for line in text.split(separator: "\n") {
                var rest = Substring(line.prefix { $0 != "#" })
                while let first = rest.first {
                    if first == " " || first == "\t" {
                        rest = rest.dropFirst()
                    } else if rest.hasPrefix("->") {
                        tokens.append("->")
                        rest = rest.dropFirst(2)
                    } else if "():,?[]".contains(first) {
                        tokens.append(String(first))
                        rest = rest.dropFirst()
                    } else {
                        let word = rest.prefix { !" \t():,?[]#".contains($0) }
                        precondition(!word.isEmpty, "unexpected \(first) in the interface description")
                        tokens.append(String(word))
                        rest = rest.dropFirst(word.count)
                    }
                }
            }
        }

        /// The next token, or nil at the end.
        mutating func next() -> String? {
            guard index < tokens.count else { return nil }
            defer { index += 1 }
            return tokens[index]
        }

        /// The next token, which must be there.
        mutating func name() -> String {
            guard let token = next() else { preconditionFailure("the interface description ends early") }
            return token
        }

        mutating func expect(_ token: String) {
            let found = name()
            precondition(found == token, "expected \(token), found \(found) in the interface description")
        }

        /// `(name: T, ...)` or `(a, b, ...)`.
        mutating func members() -> Shape {
            expect("(")
            var fields: [Field] = []
            var names: [String] = []
            while true {
                let token = name()
                if token == ")" { break }
                if token == "," { continue }
                if index < tokens.count, tokens[index] == ":" {
                    index += 1
                    fields.append(Field(name: token, shape: shape()))
                } else {
                    names.append(token)
                }
            }
            precondition(fields.isEmpty || names.isEmpty, "a struct with members without types in the interface description")
            return names.isEmpty ? .fields(fields) : .choice(names)
        }

        /// A type.
        mutating func shape() -> Shape {
            switch name() {
            case "?": return .optional(shape())
            case "[":
                if name() == "]" { return .array(shape()) }
                expect("]")
                return .map(shape())
            case "(":
                index -= 1
                return members()
            case "bool": return .bool
            case "int": return .int
            case "float": return .float
            case "string": return .string
            case "object": return .object
            case let other: return .named(other)
            }
        }
    }
}

extension ReplyContract.Shape {
    /// The type without its `?`.
    var required: Self {
        if case let .optional(wrapped) = self { return wrapped }
        return self
    }
}
