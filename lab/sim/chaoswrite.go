package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/lab/oracle"
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
	maxReadBack   = 32 << 20 // bytes of one answer
)

// Writer applies small writes to a control plane during a run, one at a time, moving to the
// next voter after an error (any voter forwards a write to the leader), and checks every
// acknowledged one against linearizable reads of the control plane's state.
type Writer struct {
	voters []*client.Client // one per voter: a call asks that voter only
	zone   string

	mu      sync.Mutex
	ledger  *oracle.WriteLedger
	skipped int // writes not sent: their key's last acknowledged write could not be checked yet
}

// NewWriter returns a writer of the zone through the voters' APIs at apis, with the write
// token; hc makes the requests (nil: a client of the default transport).
func NewWriter(apis []string, zone, token string, hc *http.Client) (*Writer, error) {
	if len(apis) == 0 || zone == "" {
		return nil, errors.New("sim: writes need a control plane and a zone")
	}
	w := &Writer{zone: zone, ledger: oracle.NewWriteLedger()}
	for _, api := range apis {
		c, err := client.New(client.Config{Voters: []string{api}, Token: token, HTTP: hc, MaxAnswer: maxReadBack})
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		w.voters = append(w.voters, c)
	}
	return w, nil
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
			rb, err := w.readOnce(ctx, w.voters[api])
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
				api = (api + 1) % len(w.voters)
			}
			if pending {
				continue
			}
		}
		idx, err := w.put(ctx, w.voters[api], key, seq)
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
			api = (api + 1) % len(w.voters)
		}
	}
}

// put writes sequence number seq to key through the voter c and returns the raft index the
// API acknowledged it at. Any error leaves the write's outcome unknown: it may have been
// applied.
func (w *Writer) put(ctx context.Context, c *client.Client, key string, seq int) (uint64, error) {
	rs := &config.RecordSet{Name: key, Type: config.TypeTXT, TTL: config.TTL(30),
		Records: []config.Record{{Value: writePrefix + strconv.Itoa(seq)}}}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	ack, err := c.PutRecordSet(ctx, w.zone, rs)
	if err != nil {
		return 0, err
	}
	if ack.Index == 0 {
		return 0, fmt.Errorf("PUT record set %s: no index in the acknowledgement", key)
	}
	return ack.Index, nil
}

// Verify reads the control plane's state back linearizably (retrying across voters for up
// to within), checks every acknowledged write not checked yet, and returns the figures.
func (w *Writer) Verify(ctx context.Context, within time.Duration) oracle.WriteStats {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; ; i++ {
		rb, err := w.readOnce(ctx, w.voters[i%len(w.voters)])
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

// readOnce asks the voter c for the zone's record sets, linearizably.
func (w *Writer) readOnce(ctx context.Context, c *client.Client) (oracle.ReadBack, error) {
	rb := oracle.ReadBack{Values: map[string]int{}}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	sets, meta, err := c.Consistent().RecordSets(ctx, w.zone)
	if err != nil {
		return rb, fmt.Errorf("GET record sets: %w", err)
	}
	if !meta.Consistent || meta.Index == 0 {
		return rb, errors.New("GET record sets: the read was not linearizable")
	}
	rb.Index = meta.Index
	for _, rs := range sets {
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
// voters and checks its writes (writerAPIs), nil for any other.
func startWriter(sc Script, n network, doc *config.Document) (*Writer, error) {
	if sc.voters() < 2 || len(doc.Zones) == 0 {
		return nil, nil
	}
	apis := n.writerAPIs()
	if len(apis) == 0 {
		return nil, nil
	}
	return NewWriter(apis, doc.Zones[0].Name, nodesToken, nil)
}
