package agent

// What the external tests (package node_test, which may import package cluster) share of
// the internal tests' helpers.
var (
	Eventually   = eventually
	Query        = query
	FmtAnswer    = fmtAnswer
	TestLogger   = testLogger
	TestKey      = testKey
	DemoDocPorts = demoDocPorts
)
