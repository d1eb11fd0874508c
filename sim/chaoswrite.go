package sim

import (
	"bytes"
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
	"github.com/vigil-dns/vigil/oracle"
)

// Writer settings: the writes are TXT record sets chaos-0 to chaos-24 of a zone, which no A
// query reads, each write the next number of one sequence to the next key in turn. A key is
// written again only after a linearizable read has checked its last acknowledged write, so
// that every acknowledged write is checked with its own value (oracle.WriteLedger): 25 keys
// at 5 writes a second make one read every 5 s.
const (
	writeKeys     = 25
	writeInterval = 200 * time.Millisecond
	writeTimeout  = 3 * time.Second
	maxWrites     = 100_000
	writePrefix   = "vigil-chaos-write-"
)

// Writer applies small writes to a control plane during a run, one at a time, moving to the
// next voter after an error (any voter forwards a write to the leader), and checks every
// acknowledged one against linearizable reads of the control plane's state.
type Writer struct {
	apis   []string
	zone   string
	token  string
	client *http.Client

	mu      sync.Mutex
	ledger  *oracle.WriteLedger
	skipped int // writes not sent: their key's last acknowledged write could not be checked yet
}

// NewWriter returns a writer of the zone through the voters' APIs at apis, with the write
// token; client makes the requests (nil: http.DefaultClient).
func NewWriter(apis []string, zone, token string, client *http.Client) (*Writer, error) {
	if len(apis) == 0 || zone == "" {
		return nil, errors.New("sim: writes need a control plane and a zone")
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &Writer{apis: apis, zone: zone, token: token, client: client, ledger: oracle.NewWriteLedger()}, nil
}

// writeKey is the record set name of sequence number seq.
func writeKey(seq int) string { return fmt.Sprintf("chaos-%d", seq%writeKeys) }

// Run writes every writeInterval until ctx ends (at most maxWrites). Before a key is written
// again, a linearizable read checks the writes waiting; while it cannot be made, the key's
// writes are skipped.
func (w *Writer) Run(ctx context.Context) {
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	api := 0
	for seq := 1; seq <= maxWrites; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key := writeKey(seq)
		w.mu.Lock()
		pending := w.ledger.Pending(key)
		w.mu.Unlock()
		if pending {
			rb, err := w.readOnce(ctx, w.apis[api])
			w.mu.Lock()
			if err == nil {
				w.ledger.Check(rb)
			}
			pending = w.ledger.Pending(key)
			if pending {
				w.skipped++
			}
			w.mu.Unlock()
			if err != nil {
				api = (api + 1) % len(w.apis)
			}
			if pending {
				continue
			}
		}
		idx, err := w.put(ctx, w.apis[api], key, seq)
		if ctx.Err() != nil {
			return // cut short by the end of the run: not counted
		}
		w.mu.Lock()
		if err == nil {
			w.ledger.Acked(oracle.Write{Key: key, Value: seq, Index: idx})
		} else {
			w.ledger.Failed(key, seq)
		}
		w.mu.Unlock()
		if err != nil {
			api = (api + 1) % len(w.apis)
		}
	}
}

// put writes sequence number seq to key through the voter at api and returns the raft index
// the API acknowledged it at.
func (w *Writer) put(ctx context.Context, api, key string, seq int) (uint64, error) {
	rs := config.RecordSet{Name: key, Type: config.TypeTXT, TTL: config.TTL(30),
		Records: []config.Record{{Value: writePrefix + strconv.Itoa(seq)}}}
	body, err := json.Marshal(rs)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	u := fmt.Sprintf("%s/v1/zones/%s/record_sets/%s/TXT", api, url.PathEscape(w.zone), key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("PUT %s: %s", req.URL.Path, resp.Status)
	}
	var ack struct {
		Index uint64 `json:"index"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ack); err != nil || ack.Index == 0 {
		return 0, fmt.Errorf("PUT %s: no index in the acknowledgement (%v)", req.URL.Path, err)
	}
	return ack.Index, nil
}

// Verify reads the control plane's state back linearizably (retrying across voters for up
// to within), checks every acknowledged write not checked yet, and returns the figures.
func (w *Writer) Verify(ctx context.Context, within time.Duration) oracle.WriteStats {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; ; i++ {
		rb, err := w.readOnce(ctx, w.apis[i%len(w.apis)])
		if err == nil {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.ledger.Check(rb)
			return w.stats()
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ledger.ReadFailed(fmt.Errorf("sim: no linearizable read within %v: %w", within, last))
	return w.stats()
}

// stats returns the ledger's figures with the writes skipped; w.mu is held.
func (w *Writer) stats() oracle.WriteStats {
	s := w.ledger.Stats()
	s.Skipped = w.skipped
	return s
}

// readOnce asks the voter at api for the zone's record sets, linearizably.
func (w *Writer) readOnce(ctx context.Context, api string) (oracle.ReadBack, error) {
	rb := oracle.ReadBack{Values: map[string]int{}}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	u := fmt.Sprintf("%s/v1/zones/%s/record_sets?consistent", api, url.PathEscape(w.zone))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return rb, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.client.Do(req)
	if err != nil {
		return rb, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return rb, fmt.Errorf("GET record sets: %s", resp.Status)
	}
	var body struct {
		Index      uint64             `json:"index"`
		Consistent bool               `json:"consistent"`
		Data       []config.RecordSet `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&body); err != nil {
		return rb, fmt.Errorf("GET record sets: %w", err)
	}
	if !body.Consistent || body.Index == 0 {
		return rb, errors.New("GET record sets: the read was not linearizable")
	}
	rb.Index = body.Index
	for _, rs := range body.Data {
		name, _, _ := strings.Cut(rs.Name, ".")
		if rs.Type != config.TypeTXT || !strings.HasPrefix(name, "chaos-") || len(rs.Records) != 1 {
			continue
		}
		v := strings.Trim(rs.Records[0].Value, `"`)
		n, err := strconv.Atoi(strings.TrimPrefix(v, writePrefix))
		if err != nil || !strings.HasPrefix(v, writePrefix) {
			return rb, fmt.Errorf("GET record sets: %s holds %q", rs.Name, rs.Records[0].Value)
		}
		rb.Values[name] = n
	}
	return rb, nil
}

// startWriter returns the writer of a script whose network runs a control plane of several
// voters, nil for any other.
func startWriter(sc Script, n network, doc *config.Document) (*Writer, error) {
	nn, ok := n.(*nodesNetwork)
	if !ok || sc.voters() < 2 || len(doc.Zones) == 0 {
		return nil, nil
	}
	return NewWriter(nn.ControlAPIs(), doc.Zones[0].Name, nodesToken, nil)
}
