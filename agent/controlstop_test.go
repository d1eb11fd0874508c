package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// A voter that stops while data-plane Watchers wait on its blocking reads stops promptly:
// the waiting reads end when the stop begins. Found by `vigil sim chaos` (kill-leader): the
// API server's graceful shutdown waited for the blocking reads until its 5s timeout, and
// meanwhile the voter kept leading with its API closed, so every write (forwarded to it)
// failed for 5s.
func TestVoterStopsPromptlyWithBlockingReads(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	voter, api := startVoter(t, demoDoc(t, targets), nil)
	index := func() (uint64, error) {
		resp, err := blockingGet(context.Background(), api+"/v1/state")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return strconv.ParseUint(resp.Header.Get("X-Vigil-Index"), 10, 64)
	}
	idx, err := index()
	if err != nil || idx == 0 {
		t.Fatalf("index: %d, %v", idx, err)
	}
	// Three Watchers' worth of blocking reads, each willing to wait a minute.
	const readers = 3
	ended := make(chan error, readers)
	for range readers {
		go func() {
			resp, err := blockingGet(context.Background(), fmt.Sprintf("%s/v1/state?index=%d&wait=60s", api, idx))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			ended <- err
		}()
	}
	time.Sleep(300 * time.Millisecond) // the reads are waiting
	begin := time.Now()
	voter.once.Do(func() {}) // stopped here, not by the cleanup
	voter.cancel()
	const bound = 3 * time.Second // the shutdown's own timeout is 5s
	select {
	case err := <-voter.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("the voter did not stop within %v of its context ending, with %d blocking reads waiting", bound, readers)
	}
	for range readers {
		select {
		case <-ended:
		case <-time.After(bound):
			t.Fatalf("a blocking read did not end within %v of the stop", bound)
		}
	}
	t.Logf("stopped, and every blocking read ended, %v after the stop began", time.Since(begin).Round(time.Millisecond))
}

// blockingGet reads the API with the test token.
func blockingGet(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultClient.Do(req)
}
