package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// Step kinds of a script.
const (
	StepDown = "down" // a region's target fails its health check
	StepUp   = "up"   // it passes again
	StepCut  = "cut"  // one region cut from every other, or the link between two
	StepHeal = "heal" // every link restored
	StepHold = "hold" // let the network run as it is for a while
	StepWait = "wait" // wait until every location's verdicts match the fault model

	StepOffline = "offline" // one checker loses its own network (nodes network)
	StepOnline  = "online"  // it gets it back
	StepNetwork = "network" // the network to run on: the first step, if any

	StepControlDown = "control-down" // the control plane is lost for good (nodes network)
	StepRestart     = "restart"      // every data-plane node restarts from its data directory

	StepPoison  = "poison"  // the poison network's hostile endpoints hang and flood
	StepCure    = "cure"    // they answer normally again
	StepGrow    = "grow"    // n more checkers join at once, spread over the regions (nodes network)
	StepMeasure = "measure" // measure every node's goroutines, heap and sockets (nodes network)
	// Chaos steps (nodes network; see chaos_steps.go).
	StepKill       = "kill"        // one node stops (a voter, a location or a checker)
	StepStart      = "start"       // it starts again from its data directory; "start all": every stopped node
	StepKillLeader = "kill-leader" // the control plane's leader stops (three voters)
	StepCutOneWay  = "cut-oneway"  // packets from one region to another are lost
	StepLoss       = "loss"        // a percentage of the packets between two regions are lost
	StepLatency    = "latency"     // the link between two regions is slowed, each way
)

// DefaultWait bounds a wait step that names no bound.
const DefaultWait = 60 * time.Second

// maxSteps bounds the length of a script (a generated chaos script of an hour has about
// 2,400 steps).
const maxSteps = 5000

// Step is one line of a script.
type Step struct {
	// Kind is one of the Step constants.
	Kind string
	// Regions are what a down, up, offline, online, kill or start step names.
	Regions []string
	// Fault is the change of a link step: cut, heal, cut-oneway, loss or latency.
	Fault regions.Fault
	// For is how long a hold lasts, or the bound of a wait.
	For time.Duration
	// Line is the step's line in its script, for messages.
	Line int
	// Count is how many checkers a grow step adds.
	Count int
}

// linkStep returns the step of a link fault.
func linkStep(f regions.Fault) Step { return Step{Kind: string(f.Kind), Fault: f} }

// link reports whether the step changes the links between regions.
func (s Step) link() bool {
	switch s.Kind {
	case StepCut, StepHeal, StepCutOneWay, StepLoss, StepLatency:
		return true
	}
	return false
}

// String gives the step back in the script's syntax.
func (s Step) String() string {
	if s.link() {
		return s.Fault.String()
	}
	parts := append([]string{s.Kind}, s.Regions...)
	if s.Count > 0 {
		parts = append(parts, strconv.Itoa(s.Count))
	}
	if s.For > 0 {
		parts = append(parts, s.For.String())
	}
	return strings.Join(parts, " ")
}

// fault reports whether the step injects a fault, repair whether it removes one.
func (s Step) fault() bool {
	return s.Kind == StepDown || s.Kind == StepCut || s.Kind == StepOffline || s.Kind == StepControlDown ||
		s.Kind == StepPoison || s.chaosFault()
}
func (s Step) repair() bool {
	return s.Kind == StepUp || s.Kind == StepHeal || s.Kind == StepOnline || s.Kind == StepCure || s.Kind == StepStart
}

// Script is a scenario: a name, the network it runs on and its steps, run in order.
type Script struct {
	Name string
	// Network is NetworkDev (the default) or NetworkNodes.
	Network string
	Steps   []Step

	// CheckersPerRegion is the nodes network's checkers per region at the start; 0: 3.
	CheckersPerRegion int
}

// ParseScript reads a script: one step per line, '#' starts a comment. The steps:
//
//	down <region>             the region's target fails its health check
//	up <region>               it passes again
//	cut <region> [<region>]   cut one region from every other, or two regions apart
//	heal                      restore every link
//	hold <duration>           let the network run, e.g. "hold 3s"
//	wait [<duration>]         wait until every location's verdicts match the fault model
//	offline <checker>         a checker loses its own network (nodes network only)
//	online <checker>          it gets it back
//	network dev|nodes [<n>]   the network to run on (default dev); first, if present; nodes
//	                          may name its checkers per region at the start (default 3)
//	control-down              the control plane is lost for good (nodes network only)
//	restart                   every data-plane node restarts, one at a time (nodes network)
//	poison                    the hostile endpoints hang and flood (poison networks)
//	cure                      they answer normally again
//	grow <n>                  n more checkers join at once, spread over the regions, and the
//	                          step waits until the assignment has rebalanced (nodes network)
//	measure                   every node's goroutines, heap and sockets (nodes network)
//	kill <node>               a node stops: voter-1..3, <region>-location, <region>-checker-1..3
//	start <node>|all          it starts again from its data directory (all: every stopped node)
//	kill-leader               the control plane's leader stops (nodes network, three voters)
//	cut-oneway <from> <to>    packets from one region to the other are lost (nodes network)
//	loss <a> <b> <percent>    that share of the packets between two regions is lost
//	latency <a> <b> <dur> [<jitter>]
//	                          every packet between two regions is delayed, each way, by
//	                          dur plus or minus up to jitter (jitter: real networks only)
//
// regions lists the regions a script may name. Every problem is reported, with its line.
func ParseScript(name string, r io.Reader, regions []string) (Script, error) {
	sc := Script{Name: name}
	var errs []error
	in := bufio.NewScanner(r)
	line := 0
	for in.Scan() {
		line++
		text, _, _ := strings.Cut(in.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		st, err := parseStep(f, regions)
		if err != nil {
			errs = append(errs, fmt.Errorf("sim: %s:%d: %w", name, line, err))
			continue
		}
		st.Line = line
		if st.Kind == StepNetwork {
			if len(sc.Steps) > 0 || sc.Network != "" {
				errs = append(errs, fmt.Errorf("sim: %s:%d: network must be the first step", name, line))
			}
			sc.Network, sc.CheckersPerRegion = st.Regions[0], st.Count
			continue
		}
		if len(sc.Steps) == maxSteps {
			errs = append(errs, fmt.Errorf("sim: %s:%d: more than %d steps", name, line, maxSteps))
			break
		}
		sc.Steps = append(sc.Steps, st)
	}
	if err := in.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sim: %s: %w", name, err))
	}
	if len(errs) == 0 && len(sc.Steps) == 0 {
		errs = append(errs, fmt.Errorf("sim: %s: no steps", name))
	}
	return sc, errors.Join(errs...)
}

// parseStep parses the fields of one line.
func parseStep(f []string, known []string) (Step, error) {
	st := Step{Kind: f[0]}
	args := f[1:]
	region := func(r string) error { return stepRegion(st.Kind, r, known) }
	duration := func(s string) (time.Duration, error) { return stepDuration(st.Kind, s) }
	count := func(s string, most int) (int, error) { return stepCount(st.Kind, s, most) }
	var err error
	switch st.Kind {
	case StepDown, StepUp:
		if len(args) != 1 {
			return st, fmt.Errorf("%s takes one region, got %d arguments", st.Kind, len(args))
		}
		err = region(args[0])
		st.Regions = args
	case StepCut, StepHeal, StepCutOneWay, StepLoss, StepLatency:
		st.Fault, err = regions.ParseFault(f, known)
		if err == nil && st.Kind == StepLatency && st.Fault.Delay == 0 {
			err = fmt.Errorf("latency: %q: a latency step slows a link (heal restores it)", args[2])
		}
	case StepOffline, StepOnline:
		if len(args) != 1 {
			return st, fmt.Errorf("%s takes one checker, got %d arguments", st.Kind, len(args))
		}
		st.Regions = args
	case StepNetwork:
		if len(args) == 2 && args[0] == NetworkNodes {
			if st.Count, err = count(args[1], maxCheckersPerRegion); err != nil {
				return st, err
			}
			args = args[:1]
		}
		if _, ok := networkKinds()[strings.Join(args, " ")]; !ok {
			return st, fmt.Errorf("network takes %s, %s, %s or %s, got %q", NetworkDev, NetworkNodes, NetworkPoison, NetworkPoisonUnsharded, strings.Join(f[1:], " "))
		}
		st.Regions = args
	case StepGrow:
		if len(args) != 1 {
			return st, fmt.Errorf("grow takes one number of checkers, got %d arguments", len(args))
		}
		st.Count, err = count(args[0], maxGrow)
	case StepControlDown, StepRestart, StepPoison, StepCure, StepMeasure:
		if len(args) != 0 {
			return st, fmt.Errorf("%s takes no arguments, got %d", st.Kind, len(args))
		}
	case StepHold:
		if len(args) != 1 {
			return st, fmt.Errorf("hold takes one duration, got %d arguments", len(args))
		}
		st.For, err = duration(args[0])
	case StepWait:
		st.For = DefaultWait
		switch len(args) {
		case 0:
		case 1:
			st.For, err = duration(args[0])
		default:
			return st, fmt.Errorf("wait takes at most one duration, got %d arguments", len(args))
		}
	case StepKill, StepStart, StepKillLeader:
		return parseChaosStep(st, args, known)
	default:
		return st, fmt.Errorf("unknown step %q (steps: down, up, cut, heal, hold, wait, offline, online, control-down, restart, poison, cure, grow, measure, network, kill, start, kill-leader, cut-oneway, loss, latency)", st.Kind)
	}
	return st, err
}

// stepRegion checks that r, an argument of a step of kind, is one of regions.
func stepRegion(kind, r string, regions []string) error {
	if !slices.Contains(regions, r) {
		return fmt.Errorf("%s: unknown region %q (regions: %s)", kind, r, strings.Join(regions, ", "))
	}
	return nil
}

// stepDuration parses s, an argument of a step of kind, as a duration from 1ns to 1h.
func stepDuration(kind, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > time.Hour {
		return 0, fmt.Errorf("%s: %q is not a duration from 1ns to 1h", kind, s)
	}
	return d, nil
}

// stepCount parses s, an argument of a step of kind, as a number from 1 to most.
func stepCount(kind, s string, most int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("%s: %q is not a number from 1 to %d", kind, s, most)
	}
	return n, nil
}

// needsControl reports whether the script runs the nodes network with a control plane.
func (sc Script) needsControl() bool {
	return slices.ContainsFunc(sc.Steps, func(st Step) bool { return st.Kind == StepControlDown })
}
