package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// auditNote applies one audited note by token on s.
func auditNote(t testing.TB, s *State, token string, at time.Time) *State {
	t.Helper()
	e, err := ApplyCommand(s, &Command{Op: OpAuditNote, Audit: &AuditInfo{Time: at, Token: token, Method: "PUT", Path: "/v1/x", Summary: "note by " + token}}, s.Index+1)
	if err != nil {
		t.Fatal(err)
	}
	return e.Next
}

// auditView is GET /v1/audit?limit=MaxAuditEntries of s.
func auditView(s *State) AuditView {
	v := AuditView{Entries: s.Audit(MaxAuditEntries, 0), Retained: s.opsOrEmpty().Audit.Len()}
	v.Newest, v.Head, v.ChainStart, v.Checkpoints = s.AuditChain()
	return v
}

// TestAuditRetentionPerPrincipal: a token writing three times its bound pushes out only its
// own entries; the administrator's, older, are all kept, and the chain verifies across the
// pruning. Under the old retention (the newest MaxAuditEntries overall) the same writes
// scaled to overflow it would have removed them.
func TestAuditRetentionPerPrincipal(t *testing.T) {
	s := Empty()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 5 {
		s = auditNote(t, s, "admin", at)
	}
	for range 3 * MaxAuditPerPrincipal {
		s = auditNote(t, s, "scoped", at)
	}
	admin, scoped := 0, 0
	for _, e := range s.Audit(0, 0) {
		switch e.Token {
		case "admin":
			admin++
		case "scoped":
			scoped++
		}
	}
	if admin != 5 || scoped != MaxAuditPerPrincipal {
		t.Fatalf("admin %d, scoped %d entries; want 5 and %d", admin, scoped, MaxAuditPerPrincipal)
	}
	r, err := VerifyAudit(auditView(s))
	if err != nil {
		t.Fatal(err)
	}
	if r.Pruned != 2*MaxAuditPerPrincipal || r.Chained != 5+MaxAuditPerPrincipal || r.Gaps != 1 {
		t.Fatalf("report %+v", r)
	}
}

// TestAuditGlobalBound: more principals than the log holds at their full quota: the log
// stays within MaxAuditEntries, each principal keeps a fair share, and it verifies; beyond
// MaxAuditPrincipals the principals share the overflow group.
func TestAuditGlobalBound(t *testing.T) {
	s := Empty()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := MaxAuditPrincipals + 6
	per := MaxAuditEntries/n + 50
	for i := range per {
		for p := range n {
			s = auditNote(t, s, fmt.Sprintf("p%02d", p), at.Add(time.Duration(i)*time.Millisecond))
		}
	}
	held := map[string]int{}
	overflow := 0
	for _, e := range s.Audit(0, 0) {
		held[e.Token]++
		if e.Group == AuditOverflow {
			overflow++
		}
	}
	if got := s.opsOrEmpty().Audit.Len(); got > MaxAuditEntries {
		t.Fatalf("%d entries held, bound %d", got, MaxAuditEntries)
	}
	if overflow == 0 {
		t.Fatal("no entry in the overflow group")
	}
	for p := range MaxAuditPrincipals {
		if h := held[fmt.Sprintf("p%02d", p)]; h < MaxAuditEntries/(MaxAuditPrincipals+1)-1 {
			t.Fatalf("p%02d keeps %d entries, less than a fair share", p, h)
		}
	}
	if _, err := VerifyAudit(auditView(s)); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyDetects: an entry removed from the middle, an entry altered, an entry
// moved, and the newest removed each fail verification; the log as kept verifies.
func TestAuditVerifyDetects(t *testing.T) {
	s := Empty()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1500 {
		s = auditNote(t, s, []string{"a", "b", "c"}[i%3], at)
	}
	good := auditView(s)
	if _, err := VerifyAudit(good); err != nil {
		t.Fatal(err)
	}
	clone := func() AuditView {
		v := good
		v.Entries = nil
		for _, e := range good.Entries {
			c := *e
			v.Entries = append(v.Entries, &c)
		}
		return v
	}
	removed := clone()
	removed.Entries = append(removed.Entries[:700:700], removed.Entries[701:]...)
	removed.Retained--
	altered := clone()
	altered.Entries[800].Summary = "nothing to see"
	rehashed := clone() // altered and its own hash recomputed: its successor's link breaks
	rehashed.Entries[800].Token = "someone-else"
	rehashed.Entries[800].Hash = AuditHash(rehashed.Entries[800])
	newest := clone()
	newest.Entries = newest.Entries[:len(newest.Entries)-1]
	newest.Retained--
	for name, v := range map[string]AuditView{"removed": removed, "altered": altered, "rehashed": rehashed, "newest removed": newest} {
		if _, err := VerifyAudit(v); err == nil {
			t.Errorf("%s: verifies", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestAuditMigration: a snapshot written before the log was chained (entries without
// hashes, no chain state) loads; its entries stay, unchained, and the chain starts with the
// first entry written after; the state's JSON round trip keeps the chain.
func TestAuditMigration(t *testing.T) {
	old := `{"index": 9, "document": {"regions": ["a"], "checks": [], "zones": []}, "shards": {}, "voters": {},
	 "ops": {"audit_seq": 3, "audit": [
	  {"seq": 1, "index": 2, "op": "put_check", "time": "2026-01-01T00:00:00Z", "token": "admin", "method": "PUT", "path": "/v1/checks/a", "summary": "put check a"},
	  {"seq": 2, "index": 3, "op": "put_check", "time": "2026-01-01T00:00:01Z", "token": "admin", "method": "PUT", "path": "/v1/checks/b", "summary": "put check b"},
	  {"seq": 3, "index": 4, "op": "put_check", "time": "2026-01-01T00:00:02Z", "token": "ci", "method": "PUT", "path": "/v1/checks/c", "summary": "put check c"}]}}`
	s, err := ReadState(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Audit(0, 0)); got != 3 {
		t.Fatalf("%d entries loaded, want 3", got)
	}
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for range MaxAuditPerPrincipal + 10 {
		s = auditNote(t, s, "ci", at)
	}
	v := auditView(s)
	if v.ChainStart != 3 || v.Entries[0].Seq != 1 || v.Entries[0].Hash != "" {
		t.Fatalf("chain start %d, first entry %+v", v.ChainStart, v.Entries[0])
	}
	r, err := VerifyAudit(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadState(&b)
	if err != nil {
		t.Fatal(err)
	}
	back = auditNote(t, back, "admin", at)
	s = auditNote(t, s, "admin", at)
	a, _ := json.Marshal(auditView(back))
	want, _ := json.Marshal(auditView(s))
	if !bytes.Equal(a, want) {
		t.Fatal("the log read back from a snapshot went on differently from the original")
	}
	if _, err := VerifyAudit(auditView(back)); err != nil {
		t.Fatal(err)
	}
}
