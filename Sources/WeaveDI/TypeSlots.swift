import Synchronization

/// A dense, process-wide index for every Swift type WeaveDI has seen, so that containers can keep
/// their registrations in flat tables instead of dictionaries.
///
/// Lookups are lock-free: an open-addressed table of atomic words keyed by the type's metadata
/// address. Inserts (once per type, ever) take a lock. A full table is replaced by one twice its
/// size; replaced tables are kept (their total is bounded by twice the final size), so a reader
/// holding an old table never touches freed memory.
@usableFromInline
final class TypeSlots: Sendable {
    @usableFromInline
    static let shared = TypeSlots()

    @usableFromInline
    let table: Atomic<Unmanaged<SlotTable>>

    private struct WriterState {
        /// The type of every slot; names are spelled out only when asked for (diagnostics),
        /// because spelling a type the runtime has not printed before is slow.
        var types: [Any.Type] = []
        /// What was spelled of each slot's type so far, by slot; as long as the highest slot
        /// spelled (a new type's slot adds nothing here: `spelling(ofSlot:)` reads past the end
        /// as nothing spelled).
        var spellings: [Spelling] = []
        /// The slots of each name spelled so far (more than one: types of one name).
        var slotsByName: [String: [Int]] = [:]
        /// The slot of each qualified name spelled so far.
        var slotsByQualifiedName: [String: Int] = [:]
        var retired: [SlotTable] = []

        func spelling(ofSlot slot: Int) -> Spelling {
            slot < spellings.count ? spellings[slot] : Spelling()
        }

        mutating func updateSpelling(ofSlot slot: Int, _ update: (inout Spelling) -> Void) {
            if slot >= spellings.count {
                spellings.append(contentsOf: repeatElement(Spelling(), count: slot + 1 - spellings.count))
            }
            update(&spellings[slot])
        }
    }

    /// What was spelled of one slot's type.
    fileprivate struct Spelling {
        /// Its name, as `name(ofSlot:)` spells it.
        var name: String?
        /// The name as `NameSimilarity` compares it (lowercased), made with the name.
        var compared: NameSimilarity.Compared?
        /// Whether another type's name spelled so far is the same (`slotsByName` holds more than
        /// one slot for it). A name no other has needs no qualifying in any message.
        var isShared = false
        /// Its qualified name (`Module.Outer.Name`).
        var qualified: String?
    }

    private let writer = Locked(WriterState())

    private init() {
        table = Atomic(Unmanaged.passRetained(SlotTable(capacity: 1024)))
    }

    /// The slot of `type`, assigning a new one the first time the type is seen.
    ///
    /// The key is the address of the type's metadata, which is unique per type and never 0.
    @inlinable @inline(__always)
    func slot<T>(for type: T.Type) -> Int {
        let key = UInt(bitPattern: ObjectIdentifier(type))
        let found = table.load(ordering: .acquiring)._withUnsafeGuaranteedRef { $0.find(key) }
        if found >= 0 { return found }
        return insert(key: key, type: type)
    }

    /// The name of the type at `slot`, as `String(describing:)` spells it; spelled on the first
    /// request and remembered.
    func name(ofSlot slot: Int) -> String {
        let known: (type: Any.Type, name: String?)? = writer.withLock { state in
            slot < state.types.count ? (state.types[slot], state.spelling(ofSlot: slot).name) : nil
        }
        guard let known else { return "slot \(slot)" }
        if let name = known.name { return name }
        // Spelled outside the lock: printing a type may be slow the first time.
        let name = typeName(known.type)
        let compared = NameSimilarity.Compared(name)
        writer.withLock { state in TypeSlots.record(name, compared, ofSlot: slot, in: &state) }
        return name
    }

    /// Remembers `name` as the name of `slot`, unless one is already.
    private static func record(_ name: String, _ compared: NameSimilarity.Compared, ofSlot slot: Int, in state: inout WriterState) {
        guard state.spelling(ofSlot: slot).name == nil else { return }
        state.updateSpelling(ofSlot: slot) { spelling in
            spelling.name = name
            spelling.compared = compared
        }
        state.slotsByName[name, default: []].append(slot)
        if let sharing = state.slotsByName[name], sharing.count > 1 {
            for other in sharing { state.updateSpelling(ofSlot: other) { $0.isShared = true } }
        }
    }

    /// Spells the names of `slots` not spelled yet (each once per process, as `name(ofSlot:)`
    /// does), taking the lock twice for them all rather than twice for each.
    func spellNames(ofSlots slots: [Int]) {
        let unspelled: [(slot: Int, type: Any.Type)] = writer.withLock { state in
            slots.compactMap { slot in
                slot < state.types.count && state.spelling(ofSlot: slot).name == nil ? (slot, state.types[slot]) : nil
            }
        }
        guard !unspelled.isEmpty else { return }
        let spelled = unspelled.map { known in
            let name = typeName(known.type)
            return (known.slot, name, NameSimilarity.Compared(name))
        }
        writer.withLock { state in
            for (slot, name, compared) in spelled { TypeSlots.record(name, compared, ofSlot: slot, in: &state) }
        }
    }

    /// The types and names of the slots at one moment (`spelledNames()`).
    struct SpelledNames {
        fileprivate let types: [Any.Type]
        fileprivate let spellings: [Spelling]

        private func spelling(ofSlot slot: Int) -> Spelling? { slot < spellings.count ? spellings[slot] : nil }
        /// The type at `slot` (a slot given out before the snapshot).
        func type(ofSlot slot: Int) -> Any.Type { types[slot] }
        /// The name of `slot`, if it was spelled.
        func name(ofSlot slot: Int) -> String? { spelling(ofSlot: slot)?.name }
        /// The name of `slot` as `NameSimilarity` compares it, if it was spelled.
        func compared(ofSlot slot: Int) -> NameSimilarity.Compared? { spelling(ofSlot: slot)?.compared }
        /// Whether another type spelled had the name of `slot`.
        func isShared(_ slot: Int) -> Bool { spelling(ofSlot: slot)?.isShared ?? false }
    }

    /// The types and names of every slot, as they are now: the names of many slots at the cost
    /// of one lock (the arrays are shared, not copied, until a slot or a name is added).
    func spelledNames() -> SpelledNames {
        writer.withLock { state in
            SpelledNames(types: state.types, spellings: state.spellings)
        }
    }

    /// The name of `slot` in a log line: as `name(ofSlot:)` spells it (`Repo`), but qualified
    /// (`App.Users.Repo`) when another type of the same name was named before in this process
    /// (in a log line, an error or a report: every registration logged names its type), so
    /// that two types of one name are told apart in the log. Call it only where the line is
    /// emitted (inside `WeaveDILog.log`'s message): it spells the name.
    func logName(ofSlot slot: Int) -> String {
        let name = name(ofSlot: slot)
        let shared = writer.withLock { state in state.slotsByName[name].map { $0.count > 1 } ?? false }
        return shared ? qualifiedName(ofSlot: slot) : name
    }

    /// `logName(ofSlot:)` of `type`.
    func logName(of type: Any.Type) -> String {
        logName(ofSlot: slot(forAny: type))
    }

    /// The slot of `type`, given as a metatype value.
    func slot(forAny type: Any.Type) -> Int {
        let key = UInt(bitPattern: ObjectIdentifier(type))
        let found = table.load(ordering: .acquiring)._withUnsafeGuaranteedRef { $0.find(key) }
        return found >= 0 ? found : insert(key: key, type: type)
    }

    /// Whether the name of `slot` was spelled (tests: a filtered-out log line spells nothing).
    func hasSpelledName(ofSlot slot: Int) -> Bool {
        writer.withLock { state in state.spelling(ofSlot: slot).name != nil }
    }

    /// The name of the type at `slot` with its module and enclosing types
    /// (`App.Users.Repo`), as `String(reflecting:)` spells it; for messages that name two types
    /// of the same short name. Spelled on the first request and remembered.
    func qualifiedName(ofSlot slot: Int) -> String {
        let known: (type: Any.Type, name: String?)? = writer.withLock { state in
            slot < state.types.count ? (state.types[slot], state.spelling(ofSlot: slot).qualified) : nil
        }
        guard let known else { return "slot \(slot)" }
        if let name = known.name { return name }
        let name = _typeName(known.type, qualified: true)
        writer.withLock { state in
            state.updateSpelling(ofSlot: slot) { $0.qualified = name }
            state.slotsByQualifiedName[name] = slot
        }
        return name
    }

    /// The slot of the type whose qualified name (`qualifiedName(ofSlot:)`) is `name`, if that
    /// name was spelled: how a message's names already spelled qualified are told apart from
    /// the one about to be added.
    func slot(ofQualifiedName name: String) -> Int? {
        writer.withLock { $0.slotsByQualifiedName[name] }
    }

    /// The names of `slots` for one message or report: each as `name(ofSlot:)` spells it, but
    /// qualified (`qualifiedName(ofSlot:)`) where two of them are different types of the same
    /// name (`Users.Repo` and `Orders.Repo` would both be `Repo`).
    func names(ofSlots slots: some Sequence<Int>) -> [Int: String] {
        var names: [Int: String] = [:]
        var byName: [String: [Int]] = [:]
        for slot in slots where names[slot] == nil {
            let name = name(ofSlot: slot)
            names[slot] = name
            byName[name, default: []].append(slot)
        }
        for sharing in byName.values where sharing.count > 1 {
            for slot in sharing { names[slot] = qualifiedName(ofSlot: slot) }
        }
        return names
    }

    /// The name of `slot` in a message that also names the types of `others`: qualified when
    /// one of them is another type of the same name.
    func name(ofSlot slot: Int, among others: some Sequence<Int>) -> String {
        let name = name(ofSlot: slot)
        for other in others where other != slot && self.name(ofSlot: other) == name {
            return qualifiedName(ofSlot: slot)
        }
        return name
    }

    /// Whether the types spelled `name` so far (by `name(ofSlot:)` or `qualifiedName(ofSlot:)`)
    /// are existentials (`any P`, `any P & Q`), and there is one: a message that has a type only
    /// by its name (a `ResolutionError`) learns so how to write its metatype. The run time
    /// spells `any P` as `P`, the protocol's bare name.
    func spellsExistential(_ name: String) -> Bool {
        writer.withLock { state in
            let slots = (state.slotsByName[name] ?? []) + (state.slotsByQualifiedName[name].map { [$0] } ?? [])
            return !slots.isEmpty && slots.allSatisfy { TypeRelation.isExistential(state.types[$0]) }
        }
    }

    /// How Swift 6 source writes the type spelled `name` (by `name(ofSlot:)` or
    /// `qualifiedName(ofSlot:)`), when a generic argument in it is a protocol's existential,
    /// which the run time spells without `any`: `Holder<any P>` for `Holder<P>`,
    /// `Array<Optional<Holder<any P & Q>>>`. Nil when nothing in it needs `any`, or no type of
    /// that name is known. The type as a whole being an existential is `spellsExistential`'s.
    func sourceSpelling(ofName name: String) -> String? {
        // A name two types share (`Holder<R>` for `A.R` a protocol, `B.R` a struct) tells not
        // which: no spelling then.
        let found: (slot: Int, qualified: Bool)? = writer.withLock { state in
            if let slot = state.slotsByQualifiedName[name] { return (slot, true) }
            guard let slots = state.slotsByName[name], slots.count == 1 else { return nil }
            return (slots[0], false)
        }
        guard let found else { return nil }
        let qualified = qualifiedName(ofSlot: found.slot)
        // A private type's context is spelled `(unknown context at $…)`: nothing to parse.
        guard !qualified.contains("(unknown context") else { return nil }
        var out = ""
        var changed = false
        var previous = ""  // the last path or punctuation written, spaces aside
        var index = qualified.startIndex
        while index < qualified.endIndex {
            let character = qualified[index]
            if !TypeSlots.isPathCharacter(character) {
                out.append(character)
                if character != " " { previous = String(character) }
                index = qualified.index(after: index)
                continue
            }
            var end = index
            while end < qualified.endIndex, TypeSlots.isPathCharacter(qualified[end]) { end = qualified.index(after: end) }
            let path = qualified[index..<end].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            // A member of what came before (`Outer<any P>.Inner`, `(any P & Q).Type`) keeps its dot.
            let written = found.qualified || path.first == "" ? path.joined(separator: ".") : path.last!
            // Inside a generic argument list only: the whole type's existential is the caller's.
            let inArguments = out.contains("<") || out.contains("(")
            if inArguments, previous != "any", previous != "&", TypeSlots.isProtocol(path) {
                out += "any "
                changed = true
            }
            out += written
            previous = written
            index = end
        }
        return changed ? out : nil
    }

    /// Whether `character` may stand in a dotted type path (`App.Outer.Name`).
    static func isPathCharacter(_ character: Character) -> Bool {
        character == "." || character == "_" || character.isLetter || character.isNumber
    }

    /// Whether the dotted path (`App.Outer.P`: a module, then names) names a protocol, asked of
    /// the run time by the protocol's mangled name (its enclosing types tried as a struct, an
    /// enum and a class). ASCII names only (others are mangled otherwise): false for the rest.
    static func isProtocol(_ path: [String]) -> Bool {
        guard path.count >= 2, path.count <= 5, path.allSatisfy({ part in
            !part.isEmpty && part.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic
                || ("0"..."9").contains($0)) }
        }) else { return false }
        if path == ["Swift", "AnyObject"] || path.last == "Type" || path.last == "Protocol" { return false }
        func mangled(_ part: String) -> String { "\(part.utf8.count)\(part)" }
        let module = path[0] == "Swift" ? "s" : mangled(path[0])
        var prefixes = [module]
        for enclosing in path.dropFirst().dropLast() {
            prefixes = prefixes.flatMap { prefix in ["V", "O", "C"].map { prefix + mangled(enclosing) + $0 } }
        }
        return prefixes.contains { prefix in
            _typeByName(prefix + mangled(path.last!) + "P_p").map(isSingleProtocolExistential) ?? false
        }
    }

    /// Whether `type` is the existential of one protocol. (The run time answers a protocol's
    /// mangled name made of a standard library type's, `Swift.Optional`'s, with an existential
    /// of that type's descriptor: the descriptor's kind tells.) Reads the existential's
    /// metadata: its kind, its flags and count, then its protocol's descriptor, whose flags'
    /// low five bits are its kind (3: a protocol).
    private static func isSingleProtocolExistential(_ type: Any.Type) -> Bool {
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        guard metadata.load(as: UInt.self) == 0x303 else { return false }  // existential
        let flags = metadata.load(fromByteOffset: 8, as: UInt32.self)
        let count = metadata.load(fromByteOffset: 12, as: UInt32.self)
        guard count == 1, flags & 0x4000_0000 == 0 else { return false }  // one protocol, no superclass
        let reference = metadata.load(fromByteOffset: 16, as: UInt.self) & ~1
        guard let descriptor = UnsafeRawPointer(bitPattern: reference) else { return false }
        return descriptor.load(as: UInt32.self) & 0x1F == 3
    }

    /// The type at `slot`, if one has it.
    func type(ofSlot slot: Int) -> Any.Type? {
        writer.withLock { state in slot < state.types.count ? state.types[slot] : nil }
    }

    /// How many types have a slot.
    var count: Int { writer.withLock { $0.types.count } }

    @usableFromInline
    func insert(key: UInt, type: Any.Type) -> Int {
        writer.withLock { state in
            let current = table.load(ordering: .acquiring).takeUnretainedValue()
            let again = current.find(key)
            if again >= 0 { return again }
            let slot = state.types.count
            state.types.append(type)
            if (slot + 1) * 4 > current.capacity * 3 {
                let bigger = SlotTable(capacity: current.capacity * 2)
                current.forEach { bigger.insert(key: $0, slot: $1) }
                bigger.insert(key: key, slot: slot)
                state.retired.append(current)
                let old = table.exchange(Unmanaged.passRetained(bigger), ordering: .acquiringAndReleasing)
                _ = old  // kept alive by `retired`; its +1 from passRetained is balanced here:
                old.release()
            } else {
                current.insert(key: key, slot: slot)
            }
            return slot
        }
    }
}

/// One open-addressed table of `TypeSlots`. Keys are written after their values (release), and
/// read before them (acquire), so a reader that sees a key sees its slot.
///
/// `@unchecked Sendable`: every shared word is an `Atomic`; the buffers live as long as the table.
@usableFromInline
final class SlotTable: @unchecked Sendable {
    @usableFromInline let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let keys: UnsafeMutablePointer<Atomic<UInt>>
    @usableFromInline let slots: UnsafeMutablePointer<Atomic<Int>>

    init(capacity: Int) {
        self.capacity = capacity
        mask = capacity - 1
        keys = .allocate(capacity: capacity)
        slots = .allocate(capacity: capacity)
        for i in 0..<capacity {
            (keys + i).initialize(to: Atomic(0))
            (slots + i).initialize(to: Atomic(-1))
        }
    }

    deinit {
        keys.deinitialize(count: capacity)
        keys.deallocate()
        slots.deinitialize(count: capacity)
        slots.deallocate()
    }

    @inlinable @inline(__always)
    static func hash(_ key: UInt) -> Int {
        Int(truncatingIfNeeded: (key >> 4) &* 0x9E37_79B9_7F4A_7C15 >> 17)
    }

    /// The slot stored for `key`, or -1.
    @inlinable @inline(__always)
    func find(_ key: UInt) -> Int {
        var i = SlotTable.hash(key) & mask
        while true {
            let k = keys[i].load(ordering: .acquiring)
            if k == key { return slots[i].load(ordering: .relaxed) }
            if k == 0 { return -1 }
            i = (i &+ 1) & mask
        }
    }

    /// Inserts under the writer lock of `TypeSlots`.
    func insert(key: UInt, slot: Int) {
        var i = SlotTable.hash(key) & mask
        while keys[i].load(ordering: .relaxed) != 0 { i = (i &+ 1) & mask }
        slots[i].store(slot, ordering: .relaxed)
        keys[i].store(key, ordering: .releasing)
    }

    func forEach(_ body: (UInt, Int) -> Void) {
        for i in 0..<capacity {
            let k = keys[i].load(ordering: .acquiring)
            if k != 0 { body(k, slots[i].load(ordering: .relaxed)) }
        }
    }
}

/// A type's name as `String(describing:)` spells it (`Holder<NetworkService>`: the runtime writes
/// an existential without `any`), without the
/// protocol-conformance lookups that `String(describing:)` makes first: for a type the runtime
/// has not seen before, those scan every conformance record of the process.
func typeName(_ type: Any.Type) -> String {
    _typeName(type, qualified: false)
}
