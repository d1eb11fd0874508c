package status

import (
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/quorum"
)

// overrideLister is a LocationView that also holds the maintenance overrides (the node's
// does); a view without them shows none.
type overrideLister interface {
	Overrides() []*state.Override
}

// OverrideNote is a maintenance override in force at this location, as the status API shows
// it beside the verdicts and answers it changes.
type OverrideNote struct {
	// ID is the override's id (DELETE /v1/overrides/{id} on the control API clears it).
	ID string `json:"id"`
	// Kind is healthy, unhealthy (a check forced) or drain (a record answered only in last
	// resort).
	Kind string `json:"kind"`
	// Check is the check forced; Zone, Name, Type and Value the record drained.
	Check string `json:"check,omitempty"`
	Zone  string `json:"zone,omitempty"`
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value,omitempty"`
	// Reason, Author (the token's name) and Expires are the override's.
	Reason  string    `json:"reason"`
	Author  string    `json:"author"`
	Expires time.Time `json:"expires"`
	// Sentence says it in one sentence.
	Sentence string `json:"sentence"`
}

// overridesInForce returns the overrides this location applies now.
func (a *API) overridesInForce() []OverrideNote {
	ol, ok := a.opts.Location.(overrideLister)
	if !ok {
		return nil
	}
	now := a.now()
	var out []OverrideNote
	for _, o := range ol.Overrides() {
		if !o.Active(now) {
			continue
		}
		out = append(out, OverrideNote{ID: o.ID, Kind: o.Kind, Check: o.Check, Zone: o.Zone, Name: o.Name, Type: string(o.Type),
			Value: o.Value, Reason: o.Reason, Author: o.Author, Expires: o.Expires, Sentence: o.String()})
	}
	return out
}

// noteOverride marks a verdict summary with the override that forces its check, if any: DNS
// serves the forced state, and the explanation says so first.
func noteOverride(s *VerdictSummary, notes []OverrideNote) {
	for i := range notes {
		n := &notes[i]
		if n.Check != s.ID || n.Kind == state.OverrideDrain {
			continue
		}
		s.Override = n
		s.ServedAsHealthy = n.Kind == state.OverrideHealthy
		s.ServedState = quorum.StateUnhealthy
		if s.ServedAsHealthy {
			s.ServedState = quorum.StateHealthy
		}
		s.Explanation = "Overridden: " + n.Sentence + ". The verdict underneath: " + s.Explanation
		return
	}
}

// answerOverrides returns the overrides that change an answer: drains of its records, and
// checks of its candidates forced.
func answerOverrides(ans *Answer, notes []OverrideNote) []OverrideNote {
	var out []OverrideNote
	for _, n := range notes {
		for _, c := range ans.Candidates {
			if (n.Kind == state.OverrideDrain && n.Name == ans.Name && n.Type == ans.Type && n.Value == c.Value) ||
				(n.Kind != state.OverrideDrain && n.Check != "" && n.Check == c.HealthCheck) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}
