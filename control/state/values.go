package state

// The values that data-plane nodes and the readers of their status share with the control
// plane: where a node's configuration came from (WatcherStatus) and which maintenance
// overrides a location applies (Override), with the canonical forms of zone and owner names.

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Source says where a Watcher's configuration came from.
type Source string

// The sources of a Watcher's configuration.
const (
	// SourceNone: no configuration has ever been seen; the node serves nothing.
	SourceNone Source = "none"
	// SourceDisk: the copy on local disk, because no voter has answered yet.
	SourceDisk Source = "disk"
	// SourceControlPlane: a voter answered with it.
	SourceControlPlane Source = "control-plane"
)

// WatcherStatus is what a data-plane node reports about its configuration.
type WatcherStatus struct {
	// Source is where the configuration in use came from.
	Source Source `json:"source"`
	// Index is the raft index of the configuration in use; 0 when there is none.
	Index uint64 `json:"index"`
	// Voter is the voter that last answered.
	Voter string `json:"voter,omitempty"`
	// LastContact is when a voter last answered.
	LastContact time.Time `json:"last_contact,omitzero"`
	// LastError is the last failure to reach a voter, since the last answer; empty once a
	// voter answers.
	LastError string `json:"last_error,omitempty"`
	// LastErrorVoter is the voter whose read failed last; LastErrorCause the cause in a few
	// words ("401 Unauthorized", "connection refused", "TLS", "timeout"); LastErrorAt when.
	LastErrorVoter string    `json:"last_error_voter,omitempty"`
	LastErrorCause string    `json:"last_error_cause,omitempty"`
	LastErrorAt    time.Time `json:"last_error_at,omitzero"`
	// Message says in words what the node runs from.
	Message string `json:"message"`
}

// The kinds of override.
const (
	// OverrideHealthy serves a check as healthy whatever its verdict.
	OverrideHealthy = "healthy"
	// OverrideUnhealthy serves a check as unhealthy whatever its verdict.
	OverrideUnhealthy = "unhealthy"
	// OverrideDrain treats one record as unhealthy: it is answered only in last resort.
	OverrideDrain = "drain"
)

// Override is one maintenance override.
type Override struct {
	// ID names the override: a hash of its target (OverrideID), the same for every
	// override of that target.
	ID string `json:"id"`
	// Kind is healthy or unhealthy (a check), or drain (a record).
	Kind string `json:"kind"`
	// Check is the check forced.
	Check string `json:"check,omitempty"`
	// Zone, Name, Type and Value name the record drained: its zone's apex, its absolute
	// owner name, its type and its value, all canonical.
	Zone  string            `json:"zone,omitempty"`
	Name  string            `json:"name,omitempty"`
	Type  config.RecordType `json:"type,omitempty"`
	Value string            `json:"value,omitempty"`
	// Reason says why; Author is the name of the token that set it.
	Reason string `json:"reason"`
	Author string `json:"author"`
	// Created is when it was set, Expires when it ends, by the clock of the voter that
	// took the write. Every location ends it at Expires by its own clock.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Active reports whether the override is in force at now.
func (o *Override) Active(now time.Time) bool { return now.Before(o.Expires) }

// Target describes what the override applies to, e.g. "check web" or "record www.example.com.
// A 192.0.2.1".
func (o *Override) Target() string {
	if o.Kind == OverrideDrain {
		return fmt.Sprintf("record %s %s %s", o.Name, o.Type, o.Value)
	}
	return "check " + o.Check
}

// String says the override in one sentence.
func (o *Override) String() string {
	what := "forced " + o.Kind
	if o.Kind == OverrideDrain {
		what = "drained (answered only in last resort)"
	}
	return fmt.Sprintf("%s %s by %s until %s: %s", o.Target(), what, o.Author, o.Expires.UTC().Format(time.RFC3339), o.Reason)
}

// CanonicalZone returns a zone name as the control plane compares it: lower case, with the
// final dot.
func CanonicalZone(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	return n
}

// CanonicalOwner returns the absolute lower-case owner name of a record set in zone: "@" is
// the apex, a name with a final dot is absolute, any other is relative to the zone.
func CanonicalOwner(zone, name string) string {
	z := CanonicalZone(zone)
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "@" || n == "":
		return z
	case strings.HasSuffix(n, "."):
		return n
	default:
		return n + "." + z
	}
}
