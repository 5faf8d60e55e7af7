import Testing
@testable import WeaveDIDaemon

/// What a run's record keeps of its outcome.
@Suite struct SyncRunRecordTests {
    func record(message: String?) -> SyncRunRecord {
        SyncRunRecord(
            id: "docs-1", job: "docs", outcome: SyncOutcome(result: .failed, message: message), startedAt: 1, endedAt: 2, duration: 1)
    }

    /// A job's message of any length is kept to 4096 bytes of UTF-8, cut at a character (never
    /// inside one, nor between a letter and its accent) with `…` ending it; one that fits is
    /// kept whole.
    @Test func aRunsMessage_isKeptTo4096Bytes_cutAtACharacter() {
        #expect(SyncRunRecord.messageByteLimit == 4096)
        let fits = String(repeating: "m", count: 4096)
        #expect(record(message: fits).message == fits)
        #expect(record(message: nil).message == nil)
        let long = String(repeating: "m", count: 1 << 20)
        #expect(record(message: long).message == String(repeating: "m", count: 4093) + "…")
        // `e` and a combining accent make one character of 3 bytes: 1364 of them fit in 4092.
        let accented = String(repeating: "e\u{301}", count: 2000)
        let kept = record(message: accented).message
        #expect(kept == String(repeating: "e\u{301}", count: 1364) + "…")
        #expect(kept.map { $0.utf8.count <= 4096 } == true)
    }
}
