package sim

// The chaos steps (kill, start, kill-leader, cut-oneway, loss, latency): their arguments, what
// the fault model can say of them, and their injection into the nodes network.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// chaosNetwork is what the chaos steps need of a network: the nodes network has it.
type chaosNetwork interface {
	Kill(id string) error
	Start(id string) error
	KillLeader() (string, error)
}

// nodeRegion reads a node name of the nodes network: voter-1 to voter-3 (no region),
// <region>-location or <region>-checker-N (N from 1 to the checkers per region).
func nodeRegion(name string) (region string, ok bool) {
	if v, found := strings.CutPrefix(name, "voter-"); found {
		i, err := strconv.Atoi(v)
		return "", err == nil && i >= 1 && i <= chaosVoters && v == strconv.Itoa(i)
	}
	if r, found := strings.CutSuffix(name, "-location"); found {
		return r, r != ""
	}
	r, c, found := strings.Cut(name, "-checker-")
	i, err := strconv.Atoi(c)
	return r, found && r != "" && err == nil && i >= 1 && i <= checkersPerRegion && c == strconv.Itoa(i)
}

// parseChaosStep parses the arguments of a chaos step.
func parseChaosStep(st Step, args []string, regions []string) (Step, error) {
	want := map[string]int{StepKill: 1, StepStart: 1, StepKillLeader: 0}[st.Kind]
	if len(args) != want {
		return st, fmt.Errorf("%s takes %d arguments, got %d", st.Kind, want, len(args))
	}
	switch st.Kind {
	case StepKill, StepStart:
		r, ok := nodeRegion(args[0])
		switch {
		case st.Kind == StepStart && (args[0] == "all" || args[0] == "voters"):
		case !ok && st.Kind == StepStart:
			return st, fmt.Errorf("start: %q is not a node (voter-1..3, <region>-location, <region>-checker-1..3), voters or all", args[0])
		case !ok:
			return st, fmt.Errorf("kill: %q is not a node (voter-1..3, <region>-location, <region>-checker-1..3)", args[0])
		case r != "" && !slices.Contains(regions, r):
			return st, fmt.Errorf("%s: %q is in no region of %s", st.Kind, args[0], strings.Join(regions, ", "))
		}
		st.Regions = args
	}
	return st, nil
}

// chaosFault reports whether the step is a chaos step that injects a fault.
func (s Step) chaosFault() bool {
	switch s.Kind {
	case StepKill, StepKillLeader, StepCutOneWay, StepLoss, StepLatency:
		return true
	}
	return false
}

// unmodelled reports whether the fault model cannot say what the step does to verdicts: a
// one-way cut, packet loss and latency (the model knows cut links and failed targets; a
// killed checker or voter changes no verdict while the others of its region run, and a
// restarted location is judged as a restart).
func (s Step) unmodelled() bool {
	return s.Kind == StepCutOneWay || s.Kind == StepLoss || s.Kind == StepLatency
}

// injectChaos makes a chaos step happen on the network.
func (r *runner) injectChaos(st Step) error {
	cn, ok := r.net.(chaosNetwork)
	if !ok {
		return fmt.Errorf("%s needs the nodes network (first step: network nodes)", st.Kind)
	}
	if st.unmodelled() {
		r.unmodelled = true
	}
	start := time.Now()
	switch st.Kind {
	case StepKill:
		err := cn.Kill(st.Regions[0])
		if err == nil {
			r.event(fmt.Sprintf("%s stopped in %v", st.Regions[0], time.Since(start).Round(time.Millisecond)))
		}
		return err
	case StepStart:
		return cn.Start(st.Regions[0])
	case StepKillLeader:
		id, err := cn.KillLeader()
		if err == nil {
			r.event(fmt.Sprintf("the leader, %s, stopped in %v", id, time.Since(start).Round(time.Millisecond)))
		}
		return err
	case StepCutOneWay, StepLoss, StepLatency:
		if st.Fault.Jitter > 0 {
			return errors.New("latency: a jitter needs a real network (vigil sim -real)")
		}
		return r.net.Apply(st.Fault)
	}
	return fmt.Errorf("unknown step %q", st.Kind)
}

// chaosVoters is the size of the control plane a chaos script runs: three voters, so that
// one (the leader) can be killed and the other two elect a new leader.
const chaosVoters = 3

// voters returns how many control voters the script's network runs: three with any chaos
// step (kill, start, kill-leader, cut-oneway, loss, latency; a generated script always ends
// with "start all"), one when it only loses the control plane, else none.
func (sc Script) voters() int {
	for _, st := range sc.Steps {
		switch st.Kind {
		case StepKill, StepStart, StepKillLeader, StepCutOneWay, StepLoss, StepLatency:
			return chaosVoters
		}
	}
	if sc.needsControl() {
		return 1
	}
	return 0
}
