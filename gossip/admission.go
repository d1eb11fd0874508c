package gossip

import (
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/memberlist"
)

// Reasons memberlist is told to ignore a node, as vigil_gossip_members_refused_total labels
// them.
const (
	refusedName     = "name"     // empty, too long, not UTF-8, or with control or format characters
	refusedVersions = "versions" // protocol or delegate versions this build cannot speak with
	refusedMeta     = "meta"     // metadata that does not decode, or names another node
)

// refusedEvery is how often at most the refusals of alive messages are logged: one line per
// window with the counts since the line before (a key holder may send thousands a second).
const refusedEvery = 10 * time.Second

// admission is the node as memberlist's AliveDelegate and MergeDelegate: it keeps out of
// memberlist's node table every node that could not be a Vigil node of a build this one
// speaks with. memberlist stores what an alive message says before it checks the pool's
// protocol versions; a stored node whose versions are impossible (0, or a range that does not
// hold its own current version) makes every later push/pull fail its version check
// ("incompatible: [1, 0]"), which refuses every join until the node is forgotten. A refusal
// here happens before memberlist stores or rebroadcasts anything.
type admission Pool

var (
	_ memberlist.AliveDelegate = (*admission)(nil)
	_ memberlist.MergeDelegate = (*admission)(nil)
)

// NotifyAlive implements memberlist.AliveDelegate: a node refused is not stored, updated or
// rebroadcast. memberlist itself ignores alive messages without the six versions, or with
// minimum or maximum 0, before it asks: those are counted from its log line (logging.go).
func (a *admission) NotifyAlive(peer *memberlist.Node) error {
	n := (*Pool)(a)
	if reason := n.vetNode(peer); reason != "" {
		n.refuse(reason, peer.Name)
		return refusalError(reason)
	}
	return nil
}

// NotifyMerge implements memberlist.MergeDelegate: a join whose state holds a live node
// that could not be one is refused whole, as a join from another pool would be. A healthy
// pool's state never holds one, since every node refuses such nodes one by one.
func (a *admission) NotifyMerge(peers []*memberlist.Node) error {
	n := (*Pool)(a)
	for _, p := range peers {
		if p.State != memberlist.StateAlive {
			continue // memberlist only suspects nodes it already holds on their word
		}
		if reason := n.vetNode(p); reason != "" {
			n.refuse(reason, p.Name)
			return refusalError(reason)
		}
	}
	return nil
}

// refusalError is the error memberlist logs for a refused node ("ignoring alive message for
// '<name>': <error>"); logging.go recognises it by errRefusedPrefix and leaves the logging to
// the refusal summary.
func refusalError(reason string) error {
	what := "node metadata does not decode or names another node"
	switch reason {
	case refusedName:
		what = "node name is empty, too long, not UTF-8 or holds control characters"
	case refusedVersions:
		what = "protocol versions this build cannot speak with"
	}
	return errors.New(errRefusedPrefix + what)
}

const errRefusedPrefix = "gossip: node refused: "

// vetNode returns why a node may not be a member, or "" when it may.
func (n *Pool) vetNode(p *memberlist.Node) string {
	if !validMemberName(p.Name) {
		return refusedName
	}
	if !n.speaksWith(p) {
		return refusedVersions
	}
	m, err := decodeMeta(p.Meta)
	if err != nil || m.ID != p.Name || m.Roles == 0 || m.Region == "" ||
		len(m.Region) > maxMetaField || len(m.Version) > maxMetaField || len(m.HTTP) > maxMetaField {
		return refusedMeta
	}
	return ""
}

// validMemberName reports whether a memberlist name could be a node's id: what Config
// accepts, without control or format characters (line breaks, escapes, bidi overrides) that
// would forge log lines or status output where the name is shown.
func validMemberName(name string) bool {
	if validID("node", name) != nil {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError ||
			r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// speaksWith reports whether a node's protocol and delegate versions are ones this build can
// keep a pool with: each range well formed and holding its current version, its current
// version one this build speaks, and this build's current version one it understands. Those
// are the conditions memberlist checks across the pool at every push/pull.
func (n *Pool) speaksWith(p *memberlist.Node) bool {
	own := n.vsn
	ok := func(lo, cur, hi, ownLo, ownCur, ownHi uint8) bool {
		return lo <= cur && cur <= hi && ownLo <= cur && cur <= ownHi && lo <= ownCur && ownCur <= hi
	}
	return p.PMin >= memberlist.ProtocolVersionMin &&
		ok(p.PMin, p.PCur, p.PMax, memberlist.ProtocolVersionMin, own[2], memberlist.ProtocolVersionMax) &&
		ok(p.DMin, p.DCur, p.DMax, own[3], own[5], own[4])
}

// refusalLog bounds the logging of refused nodes: the first refusal of a window is logged
// with the counts of the refusals since the last line; the others are only counted.
type refusalLog struct {
	mu     sync.Mutex
	window time.Time      // when the last line was logged
	counts map[string]int // refusals since the last line, by reason
}

// refuse counts a refused node in the metric and logs at most one line per refusedEvery.
func (n *Pool) refuse(reason, name string) {
	n.m.membersRefused.WithLabelValues(reason).Inc()
	r := &n.refusals
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[reason]++
	now := n.cfg.Now()
	if !r.window.IsZero() && now.Sub(r.window) < refusedEvery {
		r.mu.Unlock()
		return
	}
	counts := r.counts
	r.counts, r.window = map[string]int{}, now
	r.mu.Unlock()
	if len(name) > maxMetaField {
		name = strings.ToValidUTF8(name[:maxMetaField], "") + "..."
	}
	args := []any{"latest_name", name, "latest_reason", reason}
	for _, k := range []string{refusedName, refusedVersions, refusedMeta} {
		args = append(args, k, counts[k])
	}
	args = append(args, "note", "nodes announced by a holder of the gossip key that cannot be Vigil nodes: not stored; at most one such line every 10s, counts since the last; see vigil_gossip_members_refused_total")
	n.log.Warn("refused members that cannot be nodes", args...)
}
