package control

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// drip is a request body that sends its first half, then waits until released before the
// rest: a writer holding its decoding turn.
type drip struct {
	first, rest *strings.Reader
	release     chan struct{}
}

func (d *drip) Read(p []byte) (int, error) {
	if d.first.Len() > 0 {
		return d.first.Read(p)
	}
	<-d.release
	return d.rest.Read(p)
}

// TestWriteDecodingLimit: with one decoding turn, a write whose body is still arriving makes
// the next write wait, then refuse with 503 and Retry-After; the held write and later writes
// go through. With the default four turns the same second write goes through at once (the
// control: a limit that refused everything, or nothing, would fail one of the two).
func TestWriteDecodingLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxDecodes int
		want       int
	}{{"one turn", 1, http.StatusServiceUnavailable}, {"default turns", 0, http.StatusCreated}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, 1, &cluster{maxBody: 1 << 20, timing: testTiming, maxDecodes: tc.maxDecodes, decodeWait: 300 * time.Millisecond})
			base := c.voters[0].url()
			mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
			body := checkJSON("held", 8090)
			d := &drip{first: strings.NewReader(body[:10]), rest: strings.NewReader(body[10:]), release: make(chan struct{})}
			req, err := http.NewRequest("POST", base+"/v1/checks", d)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			held := make(chan int, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					held <- 0
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				held <- resp.StatusCode
			}()
			// Wait until the held write has its turn: the voter has read its first bytes.
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			code, out := do(t, "POST", base+"/v1/checks", testToken, "application/json", checkJSON("second", 8091))
			if code != tc.want {
				t.Errorf("second write while the first holds its turn: %d %s, want %d", code, out, tc.want)
			}
			if code == http.StatusServiceUnavailable {
				if waited := time.Since(start); waited < 250*time.Millisecond {
					t.Errorf("refused after %v, before the 300ms wait", waited)
				}
				if e := decodeError(t, out); !strings.Contains(e.Error, "the limit") {
					t.Errorf("refusal says %q", e.Error)
				}
			}
			close(d.release)
			select {
			case code := <-held:
				if code != http.StatusCreated {
					t.Errorf("held write: %d, want 201", code)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("held write never answered")
			}
			mustWrite(t, "POST", base+"/v1/checks", "application/json", checkJSON("third", 8092))
		})
	}
}
