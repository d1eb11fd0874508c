package sim

// What a scripted run found: its timeline, history, audit and figures.

import (
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
	"github.com/vigil-dns/vigil/quorum"
)

// Event is one line of a run's timeline.
type Event struct {
	// At is the time since the script started.
	At time.Duration
	// What says what happened.
	What string
}

// Result is what a run found.
type Result struct {
	// Scenario is the script's name.
	Scenario string
	// Regions are the network's regions, which are also its locations.
	Regions []string
	// Timeline lists what the run did and saw.
	Timeline []Event
	// History is every answer and verdict change recorded.
	History answeraudit.History
	// Audit is what the audit of History found (package answeraudit).
	Audit answeraudit.Findings
	// Dropped counts queries not made because the history was full.
	Dropped int
	// Faulted is how long faults were in force: from the first fault to the last repair (or
	// the end of the script).
	Faulted time.Duration
	// Detection is from the first fault to the wait that saw every location settle on it;
	// Recovery from the last repair to the wait that saw them settle again. Zero when the
	// script has no such wait.
	Detection, Recovery time.Duration
	// Flips counts verdict changes, after the network was ready, of the (location, check)
	// pairs the fault model kept healthy throughout: healthy endpoints flipped. Target 0.
	Flips []answeraudit.Change
	// StarvedFlips are the verdict changes of those pairs that a stall of the harness at
	// least as long as the check's probe timeout explains (starved.go): not counted in Flips.
	StarvedFlips []answeraudit.Change
	// Counted are, by location and check, the extremes of what the verdicts counted from
	// ready to the last repair; AfterRepair from the last repair to the end. Without a
	// repair, AfterRepair is empty.
	Counted, AfterRepair map[string]map[string]Counted
	// Final are the last verdict states seen at every location.
	Final map[string]map[string]quorum.State
	// Poison is what a poison network measured of the probes' schedule; nil on others.
	Poison *PoisonFigures
	// Growth holds what grow and measure steps found; nil without them.
	Growth *Growth
	// ReadyAt is when the network was ready and the script started.
	ReadyAt time.Time
	// Unmodelled is set when a fault the model cannot judge was injected (a one-way cut,
	// loss, latency): Flips is then not computed, and VerdictChanges says what changed.
	Unmodelled bool
	// Stalls are the intervals in which the harness's process did not run (stall.go), as
	// the oracle was told them; StallsNotKept counts those beyond the bound kept.
	Stalls        []oracle.Stall
	StallsNotKept int
	// Oracle is the independent oracle's judgement of the answers (package oracle): from
	// the document, the faults as injected and the answers alone, never a verdict; nil when
	// the network never got ready, or when the oracle could not judge (OracleErr says why).
	Oracle    *oracle.Report
	OracleErr string
	// Writes are the control-plane writes made during a run on a control plane of several
	// voters (chaos), and the acknowledged ones lost; nil without.
	Writes *oracle.WriteStats
}

// Queries returns how many queries the run made.
func (r Result) Queries() int { return len(r.History.Answers) }
