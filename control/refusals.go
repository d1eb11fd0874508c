package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
	"unicode"

	"github.com/vigil-dns/vigil/control/state"
)

// The refusal log: requests a voter refused (failed authentication on any route; a write
// refused for its scope, 403, or as invalid, 422), recorded by the voter that refused them,
// in its memory, and read with GET /v1/audit/refusals on that voter.
//
// Why not in the replicated audit log: a refusal is made before (or instead of) anything
// being authorized, so putting it in raft would give anyone who can reach the API, without
// a credential, a raft write, an fsync on every voter and a snapshot's worth of growth per
// request; bounding that would need the same rate limit as here, and what was suppressed
// would still be known only to the voter that suppressed it. A refusal changes nothing in
// the state, so there is nothing for the voters to agree on; each voter records what it
// refused, as each logs it. The cost: the refusal log is lost when the voter restarts (its
// log lines, one per recorded refusal, stay in the journal) and a cluster's refusals are
// read voter by voter. The accepted writes, in raft, cannot be pushed out by refusals at all.
//
// Bounds: the log holds the newest maxRefusals refusals of credentials that matched (a known
// token or certificate refused for its scope or role) apart from the newest maxRefusals of
// requests without a valid credential, so that a flood of bad tokens does not push out
// the refusals of a real token. Each source network (/24 of IPv4, /56 of IPv6, as DNS
// response rate limiting groups clients) and principal records at most refusalBurst
// refusals at once and one per refusalEvery after; the rest are counted, and the next one
// recorded from there is preceded by a summary entry ("N more refusals from X
// suppressed"). At most maxRefusalSources sources are tracked apart; beyond that, all others
// share one. A voter records at most refusalGlobalBurst refusals at once and
// refusalGlobalPerSecond a second of requests without a credential, and as many again of
// credentials that matched. Nothing recorded is a secret: the principal is a
// token's name when one matched (never the token, never its hash), else "unknown token",
// "no credentials" or "unverified certificate".

// Bounds of the refusal log.
const (
	maxRefusals            = 500
	maxRefusalSources      = 4096
	refusalBurst           = 10
	refusalEvery           = 6 * time.Second
	refusalGlobalBurst     = 100
	refusalGlobalPerSecond = 20
	maxRefusalReason       = 200
)

// refusalSource is the rate limit of one source network and principal.
type refusalSource struct {
	tokens     float64
	last       time.Time
	suppressed uint64
	since      time.Time
	network    string
	principal  string
}

// refusalLog is a voter's refusal log; safe for concurrent use.
type refusalLog struct {
	mu             sync.Mutex
	seq            uint64
	known, unknown []*state.RefusalEntry // rings of maxRefusals, oldest at start
	sources        map[string]*refusalSource
	global         [2]refusalRate // of requests without a credential, of those with one
	recorded       uint64
	suppressed     uint64
	dropped        uint64
}

// refusalRate is a token bucket of the voter's recorded refusals.
type refusalRate struct {
	tokens float64
	last   time.Time
}

func newRefusalLog() *refusalLog {
	return &refusalLog{sources: map[string]*refusalSource{}, global: [2]refusalRate{{tokens: refusalGlobalBurst}, {tokens: refusalGlobalBurst}}}
}

// sourceNetwork returns the network an address is limited by: its /24, or its /56.
func sourceNetwork(host string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	return ip.Mask(net.CIDRMask(56, 128)).String() + "/56"
}

// record records e (Time, Code, Principal, Source, ... set; Seq and Network filled in)
// unless its source and principal, or the voter, are over their rate; it reports whether it
// did.
func (l *refusalLog) record(e *state.RefusalEntry, known bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := e.Time
	e.Network = sourceNetwork(e.Source)
	key := e.Network + "\x00" + e.Principal
	src, ok := l.sources[key]
	if !ok {
		if len(l.sources) >= maxRefusalSources {
			l.sweep(now)
		}
		if len(l.sources) >= maxRefusalSources {
			key = "*"
			if src, ok = l.sources[key]; !ok {
				src = &refusalSource{tokens: refusalBurst, last: now, network: "other networks", principal: "any"}
				l.sources[key] = src
			}
		} else {
			src = &refusalSource{tokens: refusalBurst, last: now, network: e.Network, principal: e.Principal}
			l.sources[key] = src
		}
	}
	src.tokens = min(refusalBurst, src.tokens+now.Sub(src.last).Seconds()/refusalEvery.Seconds())
	src.last = now
	g := &l.global[0]
	if known {
		g = &l.global[1]
	}
	g.tokens = min(refusalGlobalBurst, g.tokens+now.Sub(g.last).Seconds()*refusalGlobalPerSecond)
	g.last = now
	if src.tokens < 1 || g.tokens < 1 {
		if src.suppressed == 0 {
			src.since = now
		}
		src.suppressed++
		l.suppressed++
		return false
	}
	src.tokens--
	g.tokens--
	if src.suppressed > 0 {
		l.append(&state.RefusalEntry{Time: now, Principal: src.principal, Network: src.network, Source: src.network,
			Reason:     fmt.Sprintf("%d more refusals from %s (%s) suppressed", src.suppressed, src.network, src.principal),
			Suppressed: src.suppressed, Since: src.since}, known)
		src.suppressed = 0
	}
	e.Reason = cleanReason(e.Reason)
	l.append(e, known)
	l.recorded++
	return true
}

// sweep forgets the sources whose rate is back to its burst and that have nothing
// suppressed.
func (l *refusalLog) sweep(now time.Time) {
	for k, s := range l.sources {
		if s.suppressed == 0 && s.tokens+now.Sub(s.last).Seconds()/refusalEvery.Seconds() >= refusalBurst {
			delete(l.sources, k)
		}
	}
}

// append adds e to its ring.
func (l *refusalLog) append(e *state.RefusalEntry, known bool) {
	l.seq++
	e.Seq = l.seq
	ring := &l.unknown
	if known {
		ring = &l.known
	}
	*ring = append(*ring, e)
	if len(*ring) > maxRefusals {
		*ring = append((*ring)[:0:0], (*ring)[len(*ring)-maxRefusals:]...)
		l.dropped++
	}
}

// view returns the log.
func (l *refusalLog) view(voter string) state.RefusalsView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := state.RefusalsView{Voter: voter, Known: append([]*state.RefusalEntry{}, l.known...), Unknown: append([]*state.RefusalEntry{}, l.unknown...),
		Recorded: l.recorded, Suppressed: l.suppressed, Dropped: l.dropped}
	for _, s := range l.sources {
		if s.suppressed > 0 {
			v.Pending = append(v.Pending, &state.RefusalEntry{Principal: s.principal, Network: s.network, Source: s.network, Suppressed: s.suppressed, Since: s.since,
				Reason: fmt.Sprintf("%d more refusals from %s (%s) suppressed", s.suppressed, s.network, s.principal)})
		}
	}
	return v
}

// cleanReason bounds a refusal's reason and replaces its control characters.
func cleanReason(s string) string {
	out := make([]rune, 0, len(s))
	for _, c := range s {
		if unicode.IsControl(c) {
			c = ' '
		}
		out = append(out, c)
	}
	s = string(out)
	if len(s) > maxRefusalReason {
		s = s[:maxRefusalReason]
	}
	return s
}

// refusedKey carries, on a request authentication refused, the principal whose token or
// certificate matched, for the refusal log.
type refusedKey struct{}

// withRefused returns r carrying p as the principal authentication refused.
func withRefused(r *http.Request, p Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), refusedKey{}, p))
}

// noteRefusal records, when the route and code call for it, the refusal a request got:
// failed authentication (401) on any route, 403 and 422 on write routes. body is the start
// of the error answered.
func (a *API) noteRefusal(r *http.Request, rt route, code int, body []byte) {
	if code != http.StatusUnauthorized && !(rt.write && (code == http.StatusForbidden || code == http.StatusUnprocessableEntity)) {
		return
	}
	e := &state.RefusalEntry{Time: time.Now().UTC(), Code: code, Method: r.Method, Path: r.URL.Path}
	e.Source, _, _ = net.SplitHostPort(r.RemoteAddr)
	if e.Source == "" {
		e.Source = r.RemoteAddr
	}
	known := true
	p, ok := r.Context().Value(principalKey{}).(Principal)
	if !ok {
		p, ok = r.Context().Value(refusedKey{}).(Principal)
	}
	switch {
	case ok:
		e.Principal, e.Via = p.Name, p.Via
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		if cp, verified := a.certPrincipal(r); verified {
			e.Principal, e.Via = cp.Name, cp.Via
		} else {
			e.Principal, known = "unverified certificate", false
		}
	case r.Header.Get("Authorization") == "":
		e.Principal, known = "no credentials", false
	default:
		e.Principal, known = "unknown token", false
	}
	var eb state.ErrorBody
	if json.Unmarshal(body, &eb) == nil {
		e.Reason = eb.Error
		if len(eb.Errors) > 0 {
			e.Reason += ": " + eb.Errors[0].Path + ": " + eb.Errors[0].Message
		}
	}
	if a.refusals.record(e, known) {
		a.log.Warn("control: request refused", "code", code, "principal", e.Principal, "via", e.Via, "source", e.Source,
			"method", e.Method, "path", e.Path, "reason", e.Reason)
	}
}

func (a *API) getRefusals(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(*state.State) (any, error) { return a.refusals.view(a.cfg.Node.ID()), nil })
}
