package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBootstrapCheckRefusedCredentials: a voter that refuses the bootstrap voter's
// credentials (it runs, perhaps in a cluster the bootstrap voter cannot see) stops the
// bootstrap with an error that names it; a voter that does not answer at all, or answers that
// it has no cluster, does not.
func TestBootstrapCheckRefusedCredentials(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error": "unauthorized"}`))
	}))
	defer refuse.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id": "v1", "leader": "", "servers": {}, "apis": {}, "ready": true}`))
	}))
	defer empty.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // its address no longer answers

	wait := 600 * time.Millisecond
	at, errs := findCluster(context.Background(), http.DefaultClient, []string{refuse.URL, empty.URL}, "token", wait)
	if at != "" {
		t.Fatalf("found a cluster at %s", at)
	}
	err := refusedUs(errs)
	if err == nil || !strings.Contains(err.Error(), refuse.URL) || !strings.Contains(err.Error(), "not bootstrapping") {
		t.Fatalf("a voter refusing the credentials: %v, want a refusal to bootstrap naming %s", err, refuse.URL)
	}
	// The control: voters that are down or have no cluster leave the bootstrap to go on.
	_, errs = findCluster(context.Background(), http.DefaultClient, []string{down.URL, empty.URL}, "token", wait)
	if len(errs) != 1 {
		t.Fatalf("unanswered: %v, want the voter that is down", errs)
	}
	if err := refusedUs(errs); err != nil {
		t.Fatalf("a voter that is down stops the bootstrap: %v", err)
	}
}
