package control

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/control/state"
)

// Named, scoped tokens. A voter knows its tokens from APIConfig.Tokens (in `vigil agent`, the
// token file's "name scope sha256:<hex>" lines): their names, their scopes and the SHA-256 of
// each secret, never the secret itself. The name of the token that made a request is its
// principal: the author of an override, the "who" of the audit log.

// Token is a named API token, as a voter stores it: hashed.
type Token struct {
	// Name names the token in the audit log and as an override's author.
	Name string
	// Scope is what it may do.
	Scope Scope
	// Hash is the SHA-256 of the secret.
	Hash [sha256.Size]byte
}

// Scope is what a token may do: read, or also write, everything or only some checks and
// zones (see ParseScope).
type Scope struct {
	// Write allows writes.
	Write bool
	// Checks and Zones, when either is set, limit writes to the checks whose id starts with
	// one of the Checks prefixes and to the zones (their record sets, DNSSEC keys and
	// records' overrides) at or below one of the Zones names, label by label; nothing else
	// (the document, notifications, voters) may be written. Zones are canonical: lower case,
	// with the final dot.
	Checks, Zones []string
}

// Limited reports whether the scope limits writes to prefixes.
func (s Scope) Limited() bool { return len(s.Checks) > 0 || len(s.Zones) > 0 }

// String writes the scope as ParseScope reads it.
func (s Scope) String() string {
	if !s.Write {
		return "read"
	}
	if !s.Limited() {
		return "write"
	}
	var parts []string
	for _, p := range s.Checks {
		parts = append(parts, "check="+p)
	}
	for _, p := range s.Zones {
		parts = append(parts, "zone="+p)
	}
	return "write:" + strings.Join(parts, ",")
}

// ParseScope reads "read", "write", or "write:check=PREFIX,zone=NAME,...".
//
// A check scope is a text prefix of a check's id ("check=web-" allows web-1 and web-eu):
// check ids are names of the configuration, not DNS names.
//
// A zone scope is a domain name, compared label by label with a zone's apex: "zone=example.com."
// allows the zone example.com. and every zone below it (a.example.com., b.a.example.com.),
// never example.com.victim.test. nor myexample.com. Zones below are included because the
// holder of example.com. can delegate any name under it already (an NS record set is a
// record set of its zone), so a subzone gives it no authority in DNS it lacks; a token that
// must not touch a parent zone is given the subzone's name. The name is canonicalised (lower
// case, the final dot added: "zone=Shop" is "zone=shop."); a name that is not a valid domain
// name, or the root ".", is an error.
func ParseScope(s string) (Scope, error) {
	switch s {
	case "read":
		return Scope{}, nil
	case "write":
		return Scope{Write: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "write:")
	if !ok || rest == "" {
		return Scope{}, fmt.Errorf("control: scope %q: want read, write or write:check=PREFIX,zone=NAME", s)
	}
	sc := Scope{Write: true}
	for item := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(item, "=")
		switch {
		case k == "check" && v != "":
			sc.Checks = append(sc.Checks, v)
		case k == "zone" && v != "":
			name := rdata.Fqdn(v)
			if prob := rdata.NameProblem(name); prob != "" {
				return Scope{}, fmt.Errorf("control: scope %q: zone %q is not a domain name (%s): name the zone's apex, e.g. zone=example.com.; it allows that zone and the zones below it", s, v, prob)
			}
			sc.Zones = append(sc.Zones, name)
		default:
			return Scope{}, fmt.Errorf("control: scope %q: %q is not check=PREFIX or zone=NAME", s, item)
		}
	}
	return sc, nil
}

// allowsZone reports whether the scope's zone names hold the zone apex (canonical): apex is
// one of them or lies below one, by whole labels.
func (s Scope) allowsZone(apex string) bool {
	for _, z := range s.Zones {
		if apex == z || strings.HasSuffix(apex, "."+z) {
			return true
		}
	}
	return false
}

// HashToken returns the SHA-256 of a token's secret, as a voter stores it.
func HashToken(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// NewToken returns a random secret (32 bytes, base64url) and the token file line that
// grants it scope under name: "name scope sha256:<hex>".
func NewToken(name string, scope Scope) (secret, line string, err error) {
	if !validTokenName(name) {
		return "", "", fmt.Errorf("control: token name %q: want letters, digits, '.', '_' and '-', at most 64 bytes", name)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("control: token: %w", err)
	}
	secret = "vgl_" + base64.RawURLEncoding.EncodeToString(b)
	h := HashToken(secret)
	return secret, fmt.Sprintf("%s %s sha256:%s", name, scope, hex.EncodeToString(h[:])), nil
}

// ParseTokenLine reads a token file line "name scope sha256:<hex>".
func ParseTokenLine(line string) (Token, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Token{}, errors.New("control: token line: want \"name scope sha256:<hex>\"")
	}
	if !validTokenName(f[0]) {
		return Token{}, fmt.Errorf("control: token name %q: want letters, digits, '.', '_' and '-', at most 64 bytes", f[0])
	}
	sc, err := ParseScope(f[1])
	if err != nil {
		return Token{}, fmt.Errorf("control: token %s: %w", f[0], err)
	}
	hx, ok := strings.CutPrefix(f[2], "sha256:")
	raw, err := hex.DecodeString(hx)
	if !ok || err != nil || len(raw) != sha256.Size {
		return Token{}, fmt.Errorf("control: token %s: want sha256:<64 hex digits>", f[0])
	}
	t := Token{Name: f[0], Scope: sc}
	copy(t.Hash[:], raw)
	return t, nil
}

func validTokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Principal is who made a request: the token's name and scope.
type Principal struct {
	// Name is the token's name ("anonymous" for an open read).
	Name string
	// Scope is what the token may do.
	Scope Scope
	// Via is the voter that forwarded the request, when the leader took the principal from
	// its forwarding (api_certauth.go).
	Via string
	// NoSealedKeys is set for a certificate that neither seals nor signs (a checker's): its
	// reads of the whole state and of changes carry the zones' DNSSEC keys without their
	// sealed private halves. A token cannot say which node uses it: its reads carry them.
	NoSealedKeys bool
}

type principalKey struct{}

// principalOf returns the principal of an authenticated request ("anonymous" for an open
// read).
func principalOf(r *http.Request) Principal {
	if p, ok := r.Context().Value(principalKey{}).(Principal); ok {
		return p
	}
	return Principal{Name: "anonymous"}
}

// authenticate takes a client certificate that allows the request (certPrincipal), else finds
// the request's token among the named tokens and the plain ones (named "write-token-N" and
// "read-token-N" by their place) and checks that it may make a read or a write. Every token
// is compared, in constant time, whichever matches.
func (a *API) authenticate(r *http.Request, rt route) (*http.Request, error) {
	write := rt.write
	if p, ok := a.certPrincipal(r); ok && (!write || p.Scope.Write) {
		return r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), nil
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !write && a.cfg.OpenReads && (h == "" || !ok || tok == "") {
		return r, nil
	}
	if h == "" || !ok || tok == "" {
		return r, errors.New("control: missing bearer token (Authorization: Bearer TOKEN)")
	}
	var found *Principal
	pick := func(p Principal, match bool) {
		if match && found == nil {
			found = &p
		}
	}
	ts := a.tokens.Load()
	for i, t := range ts.Write {
		pick(Principal{Name: fmt.Sprintf("write-token-%d", i+1), Scope: Scope{Write: true}}, tokenEqual(t, tok))
	}
	for i, t := range ts.Read {
		pick(Principal{Name: fmt.Sprintf("read-token-%d", i+1)}, tokenEqual(t, tok))
	}
	sum := HashToken(tok)
	for _, t := range ts.Named {
		pick(Principal{Name: t.Name, Scope: t.Scope}, subtle.ConstantTimeCompare(sum[:], t.Hash[:]) == 1)
	}
	switch {
	case found == nil && !write && a.cfg.OpenReads:
		return r, nil
	case found == nil:
		return r, errors.New("control: the bearer token is not valid for this request")
	case write && !found.Scope.Write:
		return withRefused(r, *found), errors.New("control: the bearer token is not valid for this request: it may only read")
	case write && found.Scope.Limited() && !limitedPath(rt.Path):
		return withRefused(r, *found), fmt.Errorf("%w: %s %s needs a token of scope write (token %s has %s)", errScope, rt.Method, rt.Path, found.Name, found.Scope)
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, *found)), nil
}

// limitedPath reports whether a limited token may write at path (then permit decides on
// the command).
func limitedPath(path string) bool {
	for _, p := range []string{"/v1/checks", "/v1/zones", "/v1/overrides"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// refuse answers a request that authentication refused: 403 when the token is valid but its
// scope does not allow the request, 401 otherwise.
func (a *API) refuse(w http.ResponseWriter, err error) {
	if errors.Is(err, errScope) {
		writeError(w, http.StatusForbidden, err)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
	writeError(w, http.StatusUnauthorized, err)
}

// errScope is a write the token's scope does not allow.
var errScope = errors.New("control: the token's scope does not allow this write")

// permit checks that p may make cmd on s: a limited scope only writes the checks under its
// prefixes and the zones (their record sets, keys and overrides) at or below its zones.
func permit(p Principal, s *state.State, cmd *state.Command) error {
	sc := p.Scope
	if !sc.Limited() {
		return nil
	}
	check := func(id string) error {
		for _, pre := range sc.Checks {
			if strings.HasPrefix(id, pre) {
				return nil
			}
		}
		return fmt.Errorf("%w: check %q is outside %s (token %s)", errScope, id, sc, p.Name)
	}
	zone := func(name string) error {
		apex := state.CanonicalZone(name)
		if sc.allowsZone(apex) {
			return nil
		}
		return fmt.Errorf("%w: zone %q is outside %s (token %s)", errScope, apex, sc, p.Name)
	}
	switch cmd.Op {
	case state.OpPutCheck:
		return check(cmd.Check.ID)
	case state.OpDeleteCheck:
		return check(cmd.ID)
	case state.OpPutZone:
		return zone(cmd.Zone.Name)
	case state.OpDeleteZone, state.OpPutRecordSet, state.OpDeleteRecordSet:
		return zone(cmd.ZoneName)
	case state.OpPutZoneKeys:
		if cmd.ZoneKeys != nil {
			return zone(cmd.ZoneKeys.Zone)
		}
		return zone(cmd.ZoneName)
	case state.OpSetOverride:
		if cmd.Override.Kind == state.OverrideDrain {
			return zone(cmd.Override.Zone)
		}
		return check(cmd.Override.Check)
	case state.OpClearOverride:
		o, ok := s.Override(cmd.ID)
		switch {
		case !ok:
			return nil // not found follows
		case o.Kind == state.OverrideDrain:
			return zone(o.Zone)
		}
		return check(o.Check)
	}
	return fmt.Errorf("%w: %s needs a token of scope write (token %s has %s)", errScope, cmd.Op, p.Name, sc)
}

// stamp checks that the request's token may make cmd and stamps cmd with its audit record.
func (a *API) stamp(r *http.Request, cmd *state.Command) error {
	p := principalOf(r)
	if err := permit(p, a.cfg.Node.State(), cmd); err != nil {
		return err
	}
	cmd.Audit = &state.AuditInfo{Time: time.Now(), Token: p.Name, Via: p.Via, Method: r.Method, Path: r.URL.Path, Summary: summarize(cmd)}
	return nil
}

// summarize says a command in one line, for the audit log.
func summarize(c *state.Command) string {
	switch c.Op {
	case state.OpPutCheck:
		return fmt.Sprintf("put check %s (%s %s:%d)", c.Check.ID, c.Check.Protocol, c.Check.Target.Host, c.Check.Target.Port)
	case state.OpDeleteCheck:
		return "delete check " + c.ID
	case state.OpPutZone:
		return fmt.Sprintf("put zone %s with %d record sets", c.Zone.Name, len(c.Zone.RecordSets))
	case state.OpDeleteZone:
		return "delete zone " + c.ZoneName
	case state.OpPutRecordSet:
		return fmt.Sprintf("put record set %s %s in %s: %d records, %s", c.RecordSet.Name, c.RecordSet.Type, c.ZoneName, len(c.RecordSet.Records), c.RecordSet.Policy)
	case state.OpDeleteRecordSet:
		return fmt.Sprintf("delete record set %s %s in %s", c.Name, c.Type, c.ZoneName)
	case state.OpApplyDocument:
		return fmt.Sprintf("apply document: %d regions, %d checks, %d zones", len(c.Document.Regions), len(c.Document.Checks), len(c.Document.Zones))
	case state.OpSetOverride:
		o := c.Override
		return fmt.Sprintf("set override %s %s until %s: %s", o.Kind, overrideTarget(o), o.Expires.UTC().Format(time.RFC3339), o.Reason)
	case state.OpClearOverride:
		return "clear override " + c.ID
	case state.OpPutNotifications:
		if c.Notifications == nil {
			return "remove notifications"
		}
		return fmt.Sprintf("put notifications: %d receivers, %d rules", len(c.Notifications.Receivers), len(c.Notifications.Rules))
	case state.OpPutTSIGKey:
		return fmt.Sprintf("put TSIG key %s (%s; secret sealed)", c.TSIGKey.Name, c.TSIGKey.Algorithm)
	case state.OpDeleteTSIGKey:
		return "delete TSIG key " + c.ID
	case state.OpPutVoter:
		return "put voter " + c.Voter.ID
	case state.OpDeleteVoter:
		return "delete voter " + c.ID
	case state.OpAuditNote:
		return c.Audit.Summary
	}
	return string(c.Op)
}

// overrideTarget names an override's target as its author wrote it.
func overrideTarget(o *state.Override) string {
	if o.Kind == state.OverrideDrain {
		return fmt.Sprintf("record %s %s %s in %s", o.Name, o.Type, o.Value, o.Zone)
	}
	return "check " + o.Check
}

// auditMembership records a voter added or removed (which raft's configuration holds, not a
// command) in the audit log; it returns the index of the record, 0 when it could not be
// written (logged).
func (a *API) auditMembership(r *http.Request, body []byte, index uint64) uint64 {
	var jr state.JoinRequest
	_ = json.Unmarshal(body, &jr)
	summary := fmt.Sprintf("add voter %s at %s", jr.ID, jr.RaftAddress)
	if r.Method == http.MethodDelete {
		summary = "remove voter " + r.PathValue("id")
	}
	p := principalOf(r)
	idx, err := a.cfg.Node.Apply(&state.Command{Op: state.OpAuditNote, Audit: &state.AuditInfo{Time: time.Now(), Token: p.Name, Via: p.Via,
		Method: r.Method, Path: r.URL.Path, Summary: fmt.Sprintf("%s (raft index %d)", summary, index)}})
	if err != nil {
		a.log.Error("control: recording a membership change in the audit log", "err", err)
		return 0
	}
	return idx
}
