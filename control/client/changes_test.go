package client_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

// voterStub answers GET /v1/changes and GET /v1/state with fixed answers and records the
// requests it got (path and query).
type voterStub struct {
	mu      sync.Mutex
	got     []string
	changes func(w http.ResponseWriter)
	state   func(w http.ResponseWriter)
}

func (v *voterStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.got = append(v.got, r.URL.Path+"?"+r.URL.RawQuery)
	v.mu.Unlock()
	answer := v.changes
	if r.URL.Path == "/v1/state" {
		answer = v.state
	}
	if answer == nil {
		http.NotFound(w, r)
		return
	}
	answer(w)
}

func (v *voterStub) requests() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.got...)
}

// TestChanges: Client.Changes decodes a delta and a whole state from GET /v1/changes, reads
// GET /v1/state of a voter without /v1/changes (an older version), passes a 503 to the next
// voter, and returns an *Error for another status and "undecodable answer" for a broken body.
func TestChanges(t *testing.T) {
	doc, err := config.Parse([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	if err := state.NewState(doc).WriteJSON(&whole); err != nil {
		t.Fatal(err)
	}
	body := func(s string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.Write([]byte(s)) }
	}
	status := func(code int) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) { http.Error(w, `{"error": "stub"}`, code) }
	}
	for _, c := range []struct {
		name       string
		voters     []*voterStub
		wantChecks int    // of the whole state; -1: a delta is wanted
		wantErr    string // a part of the error; empty: none
		wantPaths  []string
	}{
		{"delta", []*voterStub{{changes: body(`{"index":8,"data":{"full":false,"delta":{"from":7,"index":8}}}`)}}, -1, "",
			[]string{"/v1/changes?index=7&wait=1s"}},
		{"whole state", []*voterStub{{changes: body(`{"index":8,"data":{"full":true,"state":` + whole.String() + `}}`)}}, 2, "",
			[]string{"/v1/changes?index=7&wait=1s"}},
		{"older voter", []*voterStub{{state: body(`{"index":8,"data":` + whole.String() + `}`)}}, 2, "",
			[]string{"/v1/changes?index=7&wait=1s", "/v1/state?index=7&wait=1s"}},
		{"next voter", []*voterStub{{changes: status(http.StatusServiceUnavailable)}, {changes: body(`{"data":{"delta":{"from":7,"index":8}}}`)}}, -1, "",
			[]string{"/v1/changes?index=7&wait=1s"}},
		{"refused", []*voterStub{{changes: status(http.StatusUnauthorized)}, {changes: body(`{}`)}}, 0, "HTTP 401",
			[]string{"/v1/changes?index=7&wait=1s"}},
		{"broken", []*voterStub{{changes: body(`{"data":{"delta":`)}}, 0, "undecodable answer",
			[]string{"/v1/changes?index=7&wait=1s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var urls []string
			for _, v := range c.voters {
				srv := httptest.NewServer(v)
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			cl, err := client.New(client.Config{Voters: urls})
			if err != nil {
				t.Fatal(err)
			}
			s, d, err := cl.Changes(t.Context(), 7, time.Second)
			switch {
			case c.wantErr != "":
				var ce *client.Error
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				if c.wantErr == "HTTP 401" && (!errors.As(err, &ce) || ce.StatusCode != http.StatusUnauthorized) {
					t.Fatalf("error %v is not an *Error of a 401", err)
				}
				if got := c.voters[1:]; len(got) > 0 && len(got[0].requests()) > 0 {
					t.Fatalf("a refusal was passed to the next voter: %q", got[0].requests())
				}
			case err != nil:
				t.Fatal(err)
			case c.wantChecks < 0 && (d == nil || d.From != 7 || d.Index != 8 || s != nil):
				t.Fatalf("got state %v, delta %+v; want the delta from 7 to 8", s, d)
			case c.wantChecks >= 0 && (s == nil || d != nil || s.NumChecks() != c.wantChecks):
				t.Fatalf("got state %v, delta %+v; want a state of %d checks", s, d, c.wantChecks)
			}
			last := c.voters[len(c.voters)-1]
			if c.wantErr != "" {
				last = c.voters[0]
			}
			if got := last.requests(); strings.Join(got, " ") != strings.Join(c.wantPaths, " ") {
				t.Fatalf("the voter got %q, want %q", got, c.wantPaths)
			}
		})
	}
}
