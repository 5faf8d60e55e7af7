import Testing
import WeaveDIControl

@Suite struct ControlTests {
    @Test func interfaceName() { #expect(WeaveDIControl.interface == "io.weavedi.Daemon") }
}
