package archtest

// The rules of docs/ARCHITECTURE.md ("Boundaries"), each with the crossing
// TestEveryRuleFailsWhenCrossed feeds it. Patterns are import paths, or a
// path followed by /... for it and everything under it; m makes a path of
// the module from one relative to its root.

const mod = "github.com/loom-gateway/gateway"

func m(rel string) string { return mod + "/" + rel }

// A rule says that no package matching from depends, directly or through
// other packages, on one matching deny and none of allow. A rule with tests
// set holds for the packages' tests too (the test files and everything they
// import): those are the boundaries about layering.
type rule struct {
	id, text string
	from     []string
	skip     []string // packages of from the rule is not about
	deny     []string
	allow    []string
	tests    bool
	// cross is a deliberate crossing: the edge from cross[0] (production
	// code) to cross[1] that the rule must report.
	cross [2]string
}

var (
	faces      = []string{m("internal/handlers/..."), m("internal/mcpface/...")}
	contract   = []string{m("api/...")}
	ourPackage = []string{m("...")}
	// testHelpers are the packages only tests import: the test-only
	// packages under internal/testsupport but benchdata, whose payloads
	// cmd/loadgen prints too, and the references and fakes that stand
	// beside the package they serve.
	testHelpers = []string{
		m("internal/loom/loomref"), m("internal/jsjson/jsjsontest"), m("internal/loom/loomtest"),
		m("internal/store/storetest"), m("internal/testsupport/redistest"),
		m("internal/testsupport/testkit"), m("internal/testsupport/contracttest"),
	}
)

// rules are the 11 boundaries, B1 to B11, and the floors, F1 to F8, which
// are stricter and hold for production code.
var rules = []rule{
	{id: "B1", text: "the core imports not the contract",
		from: []string{m("internal/gateway/...")}, deny: contract, tests: true,
		cross: [2]string{m("internal/gateway"), m("api/agent")}},
	{id: "B2", text: "the core imports no face and not the console",
		from: []string{m("internal/gateway/...")}, deny: append([]string{m("web/...")}, faces...), tests: true,
		cross: [2]string{m("internal/gateway"), m("internal/mcpface")}},
	{id: "B3", text: "the error table imports not the contract (its test reads the contract to hold the table to it)",
		from: []string{m("internal/problem/...")}, deny: contract,
		cross: [2]string{m("internal/problem"), m("api")}},
	{id: "B4", text: "the console imports no face",
		from: []string{m("web/...")}, deny: faces, tests: true,
		cross: [2]string{m("web"), m("internal/mcpface")}},
	{id: "B5", text: "the console imports not loom",
		from: []string{m("web/...")}, deny: []string{m("internal/loom/...")}, tests: true,
		cross: [2]string{m("web"), m("internal/loom")}},
	{id: "B6", text: "ifc imports not loom",
		from: []string{m("internal/ifc/...")}, deny: []string{m("internal/loom/...")}, tests: true,
		cross: [2]string{m("internal/ifc"), m("internal/loom/nsinit")}},
	{id: "B7", text: "ifc imports not the store",
		from: []string{m("internal/ifc/...")}, deny: []string{m("internal/store/...")}, tests: true,
		cross: [2]string{m("internal/ifc"), m("internal/store")}},
	{id: "B8", text: "loom imports not the store",
		from: []string{m("internal/loom/...")}, deny: []string{m("internal/store/...")}, tests: true,
		cross: [2]string{m("internal/loom/loomtest"), m("internal/store/memstore")}},
	{id: "B9", text: "the store imports not loom",
		from: []string{m("internal/store/...")}, deny: []string{m("internal/loom/...")}, tests: true,
		cross: [2]string{m("internal/store/redisstore"), m("internal/loom")}},
	{id: "B10", text: "jsjson imports not ifc",
		from: []string{m("internal/jsjson/...")}, deny: []string{m("internal/ifc/...")}, tests: true,
		cross: [2]string{m("internal/jsjson/jsjsontest"), m("internal/ifc")}},
	{id: "B11", text: "the contract's packages (the generated code and api itself) import no package of ours",
		from: contract, deny: ourPackage, tests: true,
		cross: [2]string{m("api/host"), m("internal/problem")}},

	{id: "F1", text: "jsjson imports nothing of the module",
		from: []string{m("internal/jsjson")}, deny: ourPackage,
		cross: [2]string{m("internal/jsjson"), m("internal/version")}},
	{id: "F2", text: "ifc imports only jsjson",
		from: []string{m("internal/ifc")}, deny: ourPackage, allow: []string{m("internal/jsjson")},
		cross: [2]string{m("internal/ifc"), m("internal/reqid")}},
	{id: "F3", text: "loom imports only ifc, jsjson and its namespace init",
		from: []string{m("internal/loom")}, deny: ourPackage,
		allow: []string{m("internal/ifc"), m("internal/jsjson"), m("internal/loom/nsinit")},
		cross: [2]string{m("internal/loom"), m("internal/telemetry")}},
	{id: "F4", text: "loom's namespace init imports nothing of the module",
		from: []string{m("internal/loom/nsinit")}, deny: ourPackage,
		cross: [2]string{m("internal/loom/nsinit"), m("internal/jsjson")}},
	{id: "F5", text: "telemetry imports nothing of the module",
		from: []string{m("internal/telemetry")}, deny: ourPackage,
		cross: [2]string{m("internal/telemetry"), m("internal/reqid/reqctx")}},
	{id: "F6", text: "the core links no HTTP and no metrics package: not net/http, the router, the validator, the contract, the Prometheus client",
		from:  []string{m("internal/gateway"), m("internal/problem"), m("internal/result"), m("internal/telemetry")},
		deny:  []string{"net/http", "github.com/go-chi/...", "github.com/getkin/...", "github.com/prometheus/...", m("api/...")},
		cross: [2]string{m("internal/result"), "net/http"}},
	{id: "F7", text: "only tests link the test helpers: loomref (the reference reading of loom's stdout), jsjsontest, loomtest, storetest, and internal/testsupport's redistest, testkit, contracttest",
		from: ourPackage, skip: testHelpers, deny: testHelpers,
		cross: [2]string{m("internal/gateway"), m("internal/loom/loomref")}},
	{id: "F8", text: "the core links no metrics package and no HTTP package: not internal/metrics, the faces, net/http or any package under it, the Prometheus client",
		from:  []string{m("internal/gateway/...")},
		deny:  append([]string{m("internal/metrics/..."), "net/http/...", "github.com/prometheus/..."}, faces...),
		cross: [2]string{m("internal/gateway"), m("internal/metrics")}},
}

// An exception is a crossing by a package's tests that the reshaping of
// issue 39 removes. TestBoundaries fails when one is no longer crossed, so
// that the entry is deleted with the crossing.
type exception struct {
	rule, pkg, dep string // pkg's tests reach dep, a pattern
	why            string
}

var exceptions = []exception{
	{rule: "B1", pkg: m("internal/gateway"), dep: m("api/agent"),
		why: "gateway_test.go holds builderReasons to the contract with agent.InputFaultReason.Valid; problem.Reason's own test is the place for it"},
}
