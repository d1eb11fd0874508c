package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/regions"
)

// Run is one recorded run: everything the oracle judges.
type Run struct {
	// Document is the configuration in force throughout the run.
	Document *config.Document
	// Topology says where the targets and the processes are.
	Topology Topology
	// Start is when the harness found the network settled in its initial state (every target
	// up, every link whole, every node of the topology running unless it is Late): queries
	// sent before it are not judged. End is when the run stopped.
	Start, End time.Time
	// Events are the faults and repairs as applied, in time order.
	Events []Event
	// Queries are every DNS query made, in any order.
	Queries []Query
	// Stalls are the intervals in which the harness measured that it did not run (its
	// process was not scheduled, or was stopped to collect garbage). A network in the
	// harness's process stops with it, so its timers fire late by as much: every window
	// allows the stalls' total time on top of Bounds.Slack, and a query unanswered while one
	// lasted is excused. Empty for a harness that does not measure them.
	Stalls []Stall
}

// Stall is an interval in which the harness did not run.
type Stall struct {
	From, To time.Time
}

// stalled returns the total time of the run's stalls.
func (r *Run) stalled() time.Duration {
	var d time.Duration
	for _, s := range r.Stalls {
		d += s.To.Sub(s.From)
	}
	return d
}

// Topology is where things are: regions, targets and processes.
type Topology struct {
	// Regions are the network's regions.
	Regions []string
	// Targets are the endpoints that checks probe.
	Targets []Target
	// Checks maps the ID of each probed check to the name of the target it probes. A probed
	// check not in the map is outside the model: every value of it is allowed.
	Checks map[string]string
	// Nodes are the processes of the data plane and the control plane.
	Nodes []Node
}

// Target is an endpoint that checks probe.
type Target struct {
	// Name is how events name it (TargetDown, TargetUp); the harnesses use the region's name.
	Name string
	// Region is where it lives.
	Region string
}

// Role is what a process does.
type Role string

// The roles of a process.
const (
	RoleChecker  Role = "checker"
	RoleLocation Role = "location"
	RoleVoter    Role = "voter"
)

// Node is one process.
type Node struct {
	// Name is how events and queries name it.
	Name string
	// Region is where it runs.
	Region string
	// Roles are what it does.
	Roles []Role
	// Late marks a node that is not running at Start (a Start event brings it).
	Late bool
}

// Has reports whether n has role r.
func (n Node) Has(r Role) bool { return slices.Contains(n.Roles, r) }

// EventKind names a fault or a repair.
type EventKind string

// The events.
const (
	// EventLink changes the links between regions by the event's Link fault.
	EventLink EventKind = "link"
	// EventTargetDown makes Target fail its health check; EventTargetUp makes it pass.
	EventTargetDown EventKind = "target-down"
	EventTargetUp   EventKind = "target-up"
	// EventKill stops the process Node (kill -9); EventStart starts it again.
	EventKill  EventKind = "kill"
	EventStart EventKind = "start"
	// EventKillLeader stops the control plane's leader, Node when the harness knows it.
	EventKillLeader EventKind = "kill-leader"
)

// Event is one fault or repair, as applied.
type Event struct {
	// At is when it was in force: the instant the tool that applied it returned.
	At time.Time
	// Kind says what it was.
	Kind EventKind
	// Link is the change of a link event.
	Link regions.Fault
	// Target names the target of TargetDown and TargetUp.
	Target string
	// Node names the process of Kill, Start and KillLeader.
	Node string
}

// String says the event in the words of a scenario script.
func (e Event) String() string {
	at := e.At.Format("15:04:05.000")
	switch e.Kind {
	case EventLink:
		return at + " " + e.Link.String()
	case EventTargetDown, EventTargetUp:
		return fmt.Sprintf("%s %s %s", at, e.Kind, e.Target)
	case EventKill, EventStart, EventKillLeader:
		return strings.TrimSpace(fmt.Sprintf("%s %s %s", at, e.Kind, e.Node))
	}
	return fmt.Sprintf("%s %s", at, e.Kind)
}

// Query is one DNS query a location was asked, as the client saw it.
type Query struct {
	// Location is the name of the node asked.
	Location string
	// Name is the fully qualified name asked, in lower case with the final dot.
	Name string
	// Type is the type asked (A or AAAA are judged; others are counted only).
	Type config.RecordType
	// Sent and Received bracket the query: the location chose its answer in between.
	// Received may be zero when no answer came.
	Sent, Received time.Time
	// TimedOut is set when no answer came in time; Err says why any other failure happened.
	TimedOut bool
	Err      string
	// Rcode is the answer's response code (0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED);
	// ignored when TimedOut or Err is set.
	Rcode int
	// Values are the answer's records of the type asked, at the name asked, sorted.
	Values []string
}

// answered reports whether q got an answer that is not SERVFAIL or REFUSED.
func (q Query) answered() bool {
	return !q.TimedOut && q.Err == "" && q.Rcode != rcodeServFail && q.Rcode != rcodeRefused
}

// DNS response codes the oracle tells apart.
const (
	rcodeSuccess  = 0
	rcodeServFail = 2
	rcodeRefused  = 5
)

// String says the query on one line.
func (q Query) String() string {
	at := q.Sent.Format("15:04:05.000")
	switch {
	case q.TimedOut:
		return fmt.Sprintf("%s %s %s @%s: timed out", at, q.Name, q.Type, q.Location)
	case q.Err != "":
		return fmt.Sprintf("%s %s %s @%s: %s", at, q.Name, q.Type, q.Location, q.Err)
	}
	return fmt.Sprintf("%s %s %s @%s: %s [%s] in %v", at, q.Name, q.Type, q.Location, rcodeName(q.Rcode),
		strings.Join(q.Values, " "), q.Received.Sub(q.Sent).Round(time.Microsecond))
}

// rcodeName names a response code.
func rcodeName(rc int) string {
	switch rc {
	case rcodeSuccess:
		return "NOERROR"
	case 1:
		return "FORMERR"
	case rcodeServFail:
		return "SERVFAIL"
	case 3:
		return "NXDOMAIN"
	case 4:
		return "NOTIMP"
	case rcodeRefused:
		return "REFUSED"
	}
	return fmt.Sprintf("RCODE%d", rc)
}
