package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// Observation is one location's verdicts, as its digest says them.
type Observation struct {
	// Location is the location's node id; Region its region.
	Location string
	Region   string
	// States maps each check id to its verdict: "healthy", "unhealthy" or "unknown"; nil
	// when the location could not be reached.
	States map[string]string
}

// unhealthy is the state a rule counts.
const unhealthy = "unhealthy"

// Decision is what Decide found: the command to commit (empty when nothing changed) and the
// conditions that hold but have not held long enough, by alert key, since when.
type Decision struct {
	// Command is what to commit (OpNotify).
	Command state.NotifyCommand
	// Pending maps the key of each alert whose condition holds, not yet for long enough, to
	// since when it holds: the caller's memory for the next Decide.
	Pending map[string]time.Time
}

// Empty reports whether the decision changes nothing.
func (d *Decision) Empty() bool {
	c := &d.Command
	return len(c.Fire) == 0 && len(c.Repeat) == 0 && len(c.Resolve) == 0
}

// Decide applies the rules to the locations' verdicts at now. firing are the alerts the
// replicated state holds; pending are the conditions that held at the last decision, by
// alert key, since when (the caller keeps it between calls). A location that is not observed
// (its States nil) counts neither way: an alert about it neither fires nor resolves, and a
// global alert resolves only when the locations not reached could not make it hold. It is a
// pure function.
func Decide(n *config.Notifications, firing []*state.Alert, pending map[string]time.Time, obs []Observation, now time.Time) Decision {
	d := Decision{Command: state.NotifyCommand{At: now}, Pending: map[string]time.Time{}}
	if !slices.ContainsFunc(obs, func(o Observation) bool { return o.States != nil }) {
		for k, v := range pending {
			d.Pending[k] = v
		}
		return d
	}
	byKey := make(map[string]*state.Alert, len(firing))
	for _, a := range firing {
		byKey[a.Key] = a
	}
	seen := map[string]bool{} // alert keys whose condition was judged
	var rules []config.NotifyRule
	if n != nil {
		rules = n.Rules
	}
	checks := checkIDs(obs)
	for i := range rules {
		r := &rules[i]
		ids := checks
		if len(r.Checks) > 0 {
			ids = r.Checks
		}
		for _, id := range ids {
			for _, c := range conditions(r, id, obs) {
				key := state.AlertKey(r.Name, id, c.location)
				seen[key] = true
				d.judge(r, key, c, byKey[key], pending, now)
			}
		}
	}
	// Alerts whose rule is gone resolve without a word; those whose check is gone resolve.
	ruleOf := map[string]*config.NotifyRule{}
	for i := range rules {
		ruleOf[rules[i].Name] = &rules[i]
	}
	for _, a := range firing {
		if seen[a.Key] {
			continue
		}
		r := ruleOf[a.Rule]
		switch {
		case r == nil:
			d.Command.Resolve = append(d.Command.Resolve, state.AlertChange{Rule: a.Rule, Check: a.Check, Location: a.Location, Silent: true})
		case a.Location != "" && !observed(obs, a.Location):
			// Not heard from: hold.
		default:
			d.Command.Resolve = append(d.Command.Resolve, state.AlertChange{Rule: a.Rule, Check: a.Check, Location: a.Location,
				Silent: !r.Resolved(), Summary: fmt.Sprintf("%s is no longer unhealthy at %s (rule %s)", a.Check, where(a.Location), a.Rule)})
		}
	}
	return d
}

// condition is whether one alert's condition holds, with its evidence.
type condition struct {
	location  string   // the location of a regional rule's alert
	holds     bool     // the condition holds
	ends      bool     // the condition does not hold, whatever the locations not reached say
	unhealthy []string // the locations holding the check unhealthy
	observed  int      // the locations observed
}

// conditions returns the conditions of rule r about check id: one for a global rule, one per
// observed location for a regional rule (only where the location holds the check unhealthy
// or an alert could fire; the others are judged by the caller's sweep of firing alerts).
func conditions(r *config.NotifyRule, id string, obs []Observation) []condition {
	var bad []string
	reached := 0
	for _, o := range obs {
		if o.States != nil {
			reached++
		}
		if o.States[id] == unhealthy {
			bad = append(bad, o.Location)
		}
	}
	slices.Sort(bad)
	if r.Scope == config.ScopeRegional {
		out := make([]condition, 0, len(bad))
		for _, loc := range bad {
			out = append(out, condition{location: loc, holds: true, unhealthy: []string{loc}, observed: 1})
		}
		return out
	}
	need := max(r.MinLocations, 1)
	missing := len(obs) - reached
	return []condition{{holds: len(bad) >= need, ends: len(bad)+missing < need, unhealthy: bad, observed: reached}}
}

// judge decides one alert: fire when the condition has held for the rule's "for", repeat
// when due, resolve when it no longer holds.
func (d *Decision) judge(r *config.NotifyRule, key string, c condition, a *state.Alert, pending map[string]time.Time, now time.Time) {
	ch := state.AlertChange{Rule: r.Name, Check: checkOf(key, r.Name, c.location), Location: c.location, Unhealthy: c.unhealthy}
	if !c.holds {
		if a != nil && (c.ends || c.location != "") {
			ch.Silent = !r.Resolved()
			ch.Summary = fmt.Sprintf("%s is no longer unhealthy at %s (rule %s)", ch.Check, where(c.location), r.Name)
			if c.location == "" {
				ch.Summary = fmt.Sprintf("%s recovered: unhealthy at %d of %d locations observed, fewer than the %d that fire rule %s", ch.Check, len(c.unhealthy), c.observed, max(r.MinLocations, 1), r.Name)
			}
			d.Command.Resolve = append(d.Command.Resolve, ch)
		}
		return
	}
	ch.Summary = fmt.Sprintf("%s is unhealthy at %d of %d locations observed (%s) (rule %s)", ch.Check, len(c.unhealthy), c.observed, strings.Join(c.unhealthy, ", "), r.Name)
	if c.location != "" {
		ch.Summary = fmt.Sprintf("%s is unhealthy at location %s (rule %s)", ch.Check, c.location, r.Name)
	}
	if a != nil {
		if rp := r.Repeat.Std(); rp > 0 && !now.Before(a.Since.Add(time.Duration(a.Repeats+1)*rp)) {
			ch.Repeat = a.Repeats + 1
			d.Command.Repeat = append(d.Command.Repeat, ch)
		}
		return
	}
	since, ok := pending[key]
	if !ok {
		since = now
	}
	if now.Sub(since) >= r.For.Std() {
		ch.Receivers = slices.Clone(r.Receivers)
		d.Command.Fire = append(d.Command.Fire, ch)
		return
	}
	d.Pending[key] = since
}

// checkOf returns the check of an alert key of rule at location.
func checkOf(key, rule, location string) string {
	k := strings.TrimPrefix(key, rule+"/")
	if location != "" {
		k = strings.TrimSuffix(k, "@"+location)
	}
	return k
}

// checkIDs returns every check id the observations hold, sorted.
func checkIDs(obs []Observation) []string {
	set := map[string]bool{}
	for _, o := range obs { // a location not reached has no states
		for id := range o.States {
			set[id] = true
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// observed reports whether location is among the observations.
func observed(obs []Observation, location string) bool {
	for _, o := range obs {
		if o.Location == location && o.States != nil {
			return true
		}
	}
	return false
}

// where names the place of an alert: a location, or the network.
func where(location string) string {
	if location == "" {
		return "enough locations"
	}
	return "location " + location
}
