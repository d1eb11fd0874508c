// Package abuse holds Vigil's end-to-end abuse suite: tests that attack real components, count
// every attempt and what got through, and print a table row each. The components run as a user
// would run them (an encrypted memberlist pool on loopback sockets, a raft voter with its
// BoltDB log behind the real HTTP API, the checker's prober with its address policy, a
// location's DNS server with response rate limiting on real UDP sockets), and the rows are
// RESILIENCE.md's. Every test also runs a control (the same attack with the defence off, or an
// allowed request) that must get through, so that a zero is a measurement and not a test that
// cannot fail.
//
// Run it with go test -run TestAbuse -v ./tests/abuse/.
package abuse
