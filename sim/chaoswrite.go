package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Writer settings: the writes are TXT record sets chaos-0 to chaos-7 of the document's
// first zone, which no A query reads, each write the next number of one sequence.
const (
	writeKeys     = 8
	writeInterval = 200 * time.Millisecond
	writeTimeout  = 3 * time.Second
	maxWrites     = 100_000
	writePrefix   = "vigil-chaos-write-"
)

// WriteStats are the control-plane writes a run made and what a linearizable read found of
// them at the end.
type WriteStats struct {
	// Attempted counts the writes sent; Acknowledged those the API answered 200; Failed
	// the others (an error, a timeout: the write may or may not have been applied).
	Attempted, Acknowledged, Failed int
	// Lost counts keys whose value read back at the end is older than their last
	// acknowledged write (or missing), not explained by a failed write: acknowledged
	// writes lost. Target 0.
	Lost int
	// LateFailed counts keys whose value read back comes from a failed write sent before
	// their last acknowledged one (a timed-out request applied after a later one).
	LateFailed int
	// Problems lists each lost key with what was read and what was acknowledged.
	Problems []string
	// ReadBack is the error of the final read, empty when it worked.
	ReadBack string
}

// writer applies small writes to the control API during a run, one at a time, moving to
// the next voter after an error (any voter forwards a write to the leader).
type writer struct {
	apis []string
	zone string

	mu        sync.Mutex
	stats     WriteStats
	lastAcked map[string]int // key -> sequence number of its last acknowledged write
	failed    map[int]bool   // sequence numbers of failed writes (at most maxWrites)
}

// newWriter returns a writer of doc's first zone through the voters at apis.
func newWriter(apis []string, doc *config.Document) (*writer, error) {
	if len(apis) == 0 || len(doc.Zones) == 0 {
		return nil, errors.New("sim: writes need a control plane and a zone")
	}
	return &writer{apis: apis, zone: doc.Zones[0].Name, lastAcked: map[string]int{}, failed: map[int]bool{}}, nil
}

// writeKey is the record set name of sequence number seq.
func writeKey(seq int) string { return fmt.Sprintf("chaos-%d", seq%writeKeys) }

// run writes every writeInterval until ctx ends (at most maxWrites).
func (w *writer) run(ctx context.Context) {
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	api := 0
	for seq := 1; seq <= maxWrites; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := w.put(ctx, w.apis[api], seq)
		if ctx.Err() != nil {
			return // cut short by the end of the run: not counted
		}
		w.mu.Lock()
		w.stats.Attempted++
		if err == nil {
			w.stats.Acknowledged++
			w.lastAcked[writeKey(seq)] = seq
		} else {
			w.stats.Failed++
			w.failed[seq] = true
		}
		w.mu.Unlock()
		if err != nil {
			api = (api + 1) % len(w.apis)
		}
	}
}

// put writes sequence number seq to its key through the voter at api.
func (w *writer) put(ctx context.Context, api string, seq int) error {
	rs := config.RecordSet{Name: writeKey(seq), Type: config.TypeTXT, TTL: 30,
		Records: []config.Record{{Value: writePrefix + strconv.Itoa(seq)}}}
	body, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/v1/zones/%s/record_sets/%s/TXT", api, url.PathEscape(w.zone), rs.Name)
	return putJSON(ctx, u, body, writeTimeout)
}

// verify reads every key back with a linearizable read (retrying across voters for up to
// within) and counts the acknowledged writes lost.
func (w *writer) verify(ctx context.Context, within time.Duration) WriteStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	values, err := w.readBack(ctx, within)
	if err != nil {
		st.ReadBack = err.Error()
		return st
	}
	for k := range writeKeys {
		key := fmt.Sprintf("chaos-%d", k)
		acked, ok := w.lastAcked[key]
		if !ok {
			continue
		}
		got, found := values[key]
		switch {
		case found && got >= acked:
		case found && w.failed[got]:
			st.LateFailed++
			st.Problems = append(st.Problems, fmt.Sprintf("%s: read %d (a failed write), last acknowledged %d", key, got, acked))
		default:
			st.Lost++
			st.Problems = append(st.Problems, fmt.Sprintf("%s: read %d (found %v), last acknowledged %d", key, got, found, acked))
		}
	}
	return st
}

// readBack returns the sequence number each key holds, by a linearizable read.
func (w *writer) readBack(ctx context.Context, within time.Duration) (map[string]int, error) {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; ; i++ {
		out, err := w.readOnce(ctx, w.apis[i%len(w.apis)])
		if err == nil {
			return out, nil
		}
		last = err
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sim: no linearizable read within %v: %w", within, last)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sim: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readOnce asks the voter at api for the zone's record sets, linearizably.
func (w *writer) readOnce(ctx context.Context, api string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	u := fmt.Sprintf("%s/v1/zones/%s/record_sets?consistent", api, url.PathEscape(w.zone))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+nodesToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET record sets: %s", resp.Status)
	}
	var body struct {
		Consistent bool               `json:"consistent"`
		Data       []config.RecordSet `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET record sets: %w", err)
	}
	if !body.Consistent {
		return nil, errors.New("GET record sets: the read was not linearizable")
	}
	out := map[string]int{}
	for _, rs := range body.Data {
		name, _, _ := strings.Cut(rs.Name, ".")
		if rs.Type != config.TypeTXT || !strings.HasPrefix(name, "chaos-") || len(rs.Records) != 1 {
			continue
		}
		v := strings.Trim(rs.Records[0].Value, `"`)
		n, err := strconv.Atoi(strings.TrimPrefix(v, writePrefix))
		if err != nil || !strings.HasPrefix(v, writePrefix) {
			return nil, fmt.Errorf("GET record sets: %s holds %q", rs.Name, rs.Records[0].Value)
		}
		out[name] = n
	}
	return out, nil
}

// startWriter returns the writer of a script whose network runs a control plane of several
// voters, nil for any other.
func startWriter(sc Script, n network, doc *config.Document) (*writer, error) {
	nn, ok := n.(*nodesNetwork)
	if !ok || sc.voters() < 2 {
		return nil, nil
	}
	return newWriter(nn.ControlAPIs(), doc)
}

// ok reports whether no acknowledged write was lost and the final read worked; true
// without writes.
func (w *WriteStats) ok() bool { return w == nil || (w.Lost == 0 && w.ReadBack == "") }
