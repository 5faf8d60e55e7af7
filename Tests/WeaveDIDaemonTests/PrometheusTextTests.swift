import Testing
@testable import WeaveDIDaemon

@Suite struct PrometheusTextTests {
    @Test func labelValues_escapeEveryLineFeed_evenInsideACarriageReturnPair() {
        var text = PrometheusText()
        text.sample("calls", [("method", "x\r\nforged 100\r\n\"q\\")], 1)
        #expect(text.text == "calls{method=\"x\r\\nforged 100\r\\n\\\"q\\\\\"} 1\n")
        #expect(text.text.split(separator: "\n", omittingEmptySubsequences: false).count == 2)
    }
}
