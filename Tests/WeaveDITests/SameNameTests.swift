import Testing
@testable import WeaveDI

/// Two types named `Repo`, in different enclosing types.
enum Users {
    final class Repo: Sendable {
        let orders: Orders.Repo
        init(orders: Orders.Repo) { self.orders = orders }
    }
}

enum Orders {
    final class Repo: Sendable {}
}

/// Two types named `Node` that need each other: a real cycle.
enum Left {
    final class Node: Sendable {}
}

enum Right {
    final class Node: Sendable {}
}

@Suite struct SameNameTests {
    @Test func twoTypesOfOneName_oneNeedingTheOther_areNoCycle() async {
        let container = WeaveDI.Container()
        container.register(Users.Repo.self) { r in Users.Repo(orders: try r.require(Orders.Repo.self)) }
        container.register(Orders.Repo.self) { Orders.Repo() }
        let validation = await container.validate()
        #expect(validation.isValid)
        #expect(validation.cycles.isEmpty)
        let report = container.checkCycles()
        #expect(report.json.serialized == #"{"componentCount":2,"edgeCount":1,"cycles":[],"notBuilt":[]}"#)
        // Every report tells the two apart.
        #expect(container.registrations.map(\.type) == ["WeaveDITests.Users.Repo", "WeaveDITests.Orders.Repo"])
        #expect(container.registrations[0].dependencies == ["WeaveDITests.Orders.Repo"])
        #expect(validation.built == ["WeaveDITests.Users.Repo", "WeaveDITests.Orders.Repo"])
    }

    @Test func aCycleBetweenTwoTypesOfOneName_namesBothQualified() async {
        let container = WeaveDI.Container()
        container.register(Left.Node.self) { r in _ = try r.require(Right.Node.self); return Left.Node() }
        container.register(Right.Node.self) { r in _ = try r.require(Left.Node.self); return Right.Node() }
        let validation = await container.validate()
        #expect(validation.cycles == [["WeaveDITests.Left.Node", "WeaveDITests.Right.Node"]])
        #expect(container.checkCycles().cycles == [["WeaveDITests.Left.Node", "WeaveDITests.Right.Node"]])
        #expect(validation.failures.map(\.type) == ["WeaveDITests.Left.Node", "WeaveDITests.Right.Node"])
        #expect(validation.failures[0].reason.hasPrefix(
            "dependency cycle: WeaveDITests.Left.Node -> WeaveDITests.Right.Node -> WeaveDITests.Left.Node;"))
    }

    @Test func anError_namingTwoTypesOfOneName_namesBothQualified() {
        let container = WeaveDI.Container()
        container.register(Users.Repo.self) { r in Users.Repo(orders: try r.require(Orders.Repo.self)) }
        #expect(throws: ResolutionError.self) { try container.require(Users.Repo.self) }
        do {
            _ = try container.require(Users.Repo.self)
        } catch {
            #expect(error.path == ["WeaveDITests.Users.Repo", "WeaveDITests.Orders.Repo"])
            #expect(error.description.hasPrefix(
                "cannot build WeaveDITests.Users.Repo (WeaveDITests.Users.Repo -> WeaveDITests.Orders.Repo): "
                    + "no registration for WeaveDITests.Orders.Repo;"))
        }
    }

    @Test func aName_sharedWithNoOtherTypeInTheMessage_staysShort() {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = try r.require(Orders.Repo.self); return NodeA() }
        do {
            _ = try container.require(NodeA.self)
            Issue.record("NodeA built without Orders.Repo")
        } catch {
            #expect(error.path == ["NodeA", "Repo"])
        }
        #expect(container.registrations.map(\.dependencies) == [["Repo"]])
    }

    @Test func componentIssues_ofTwoTypesOfOneName_areTwo_andTellThemApart() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in
                c.register(Left.Node.self) { Left.Node() }
                c.register(Right.Node.self) { Right.Node() }
            },
            TestModule(name: "testing") { c in
                c.register(Left.Node.self) { Left.Node() }
                c.register(Right.Node.self, scope: .transient) { Right.Node() }
            },
        ])
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.type) == ["WeaveDITests.Left.Node", "WeaveDITests.Right.Node", "WeaveDITests.Right.Node"])
        #expect(issues.map(\.kind) == [.duplicateProvider, .duplicateProvider, .scopeDrift])
    }
}
