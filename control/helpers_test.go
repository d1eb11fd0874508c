package control

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

const testToken = "s3cret-write-token"

// testTiming is raft's own default timing: a leader keeps its lease through the scheduling
// delays of a loaded machine (shorter timeouts made leaders step down under load and writes
// answer 503), and an election still ends within a few seconds.
var testTiming = Timing{Heartbeat: time.Second, Election: time.Second, LeaderLease: 500 * time.Millisecond, Commit: 20 * time.Millisecond}

// seqAllocator is the deterministic stand-in for the shard package's stateful allocator:
// each zone gets the lowest free block of ShardSize servers.
type seqAllocator struct {
	size, fleet int
	used        map[string][]int
}

func newSeqAllocator(s config.NameServerSettings) (state.Allocator, error) {
	if s.ShardSize <= 0 || s.Fleet < s.ShardSize {
		return nil, fmt.Errorf("bad settings %+v", s)
	}
	return &seqAllocator{size: s.ShardSize, fleet: s.Fleet, used: map[string][]int{}}, nil
}

func (a *seqAllocator) Allocate(zone string) ([]int, error) {
	taken := map[int]bool{}
	for _, s := range a.used {
		taken[s[0]] = true
	}
	for start := 0; start+a.size <= a.fleet; start += a.size {
		if !taken[start] {
			s := make([]int, a.size)
			for i := range s {
				s[i] = start + i
			}
			a.used[zone] = s
			return s, nil
		}
	}
	return nil, fmt.Errorf("fleet of %d is full", a.fleet)
}

func (a *seqAllocator) Restore(zone string, servers []int) error {
	a.used[zone] = slices.Clone(servers)
	return nil
}

func (a *seqAllocator) Release(zone string) { delete(a.used, zone) }

// testDoc is a valid document: three regions, two HTTP checks, one zone.
const testDoc = `
regions: [us-east, eu-west, sa-east]
name_servers: {mode: stateful, fleet: 64, shard_size: 4}
checks:
  - id: web-1
    protocol: http
    target: {host: 127.0.0.1, port: 8081}
  - id: web-2
    protocol: http
    target: {host: 127.0.0.1, port: 8082}
zones:
  - name: example.test.
    record_sets:
      - name: www
        type: A
        policy: failover
        records:
          - {value: 192.0.2.1, health_check: web-1, role: primary}
          - {value: 192.0.2.2, health_check: web-2, role: secondary}
`

func checkJSON(id string, port int) string {
	return fmt.Sprintf(`{"id": %q, "protocol": "http", "target": {"host": "127.0.0.1", "port": %d}}`, id, port)
}

// voter is one voter of a test cluster: raft on TCP and its API on a real HTTP server.
type voter struct {
	id, dir, raftAddr, apiAddr string
	node                       *Server
	srv                        *http.Server
	reg                        *prometheus.Registry
	tls                        bool
	// ln is the API's listener, held from the voter's creation to its first start so that
	// no other process can take the port in between.
	ln net.Listener
}

func (v *voter) url() string {
	if v.tls {
		return "https://" + v.apiAddr
	}
	return "http://" + v.apiAddr
}

type cluster struct {
	t       testing.TB
	voters  []*voter
	maxBody int64  // API body limit; default 1 MiB
	timing  Timing // raft timeouts; default testTiming
	// snapshotThreshold, when set, keeps that many log entries after a snapshot.
	snapshotThreshold uint64
	// serverTLS, when set, serves the APIs over TLS; client then forwards between voters.
	serverTLS *tls.Config
	client    *http.Client
	// maxDecodes and decodeWait, when set, are the API's write decoding limit and wait.
	maxDecodes int
	decodeWait time.Duration
	// maxDocument, when set, bounds what a compressed document decompresses to.
	maxDocument int64
	// walSegment, when set, gives the voters write-ahead logs (LogStoreWAL) of files of
	// that size; else they keep their logs in BoltDB.
	walSegment int
	// raftSecret is the cluster secret the voters' raft transports authenticate with.
	raftSecret []byte
}

// testRaftSecret returns a new cluster secret for the raft transports of a test cluster.
func testRaftSecret(t testing.TB) []byte {
	t.Helper()
	s, err := tlsconf.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// freeAddr returns a TCP address on 127.0.0.1 whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	return freeAddrOn(t, "127.0.0.1")
}

// freeAddrOn returns a TCP address on ip whose port was free a moment ago.
func freeAddrOn(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("VIGIL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newCluster starts n voters: the first bootstraps, the others join through its API.
func newCluster(t testing.TB, n int) *cluster {
	return newClusterWith(t, n, &cluster{maxBody: 1 << 20, timing: testTiming})
}

// newClusterWith starts n voters with the body limit and timing of c.
func newClusterWith(t testing.TB, n int, c *cluster) *cluster {
	t.Helper()
	c.t = t
	if c.raftSecret == nil {
		c.raftSecret = testRaftSecret(t)
	}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		v := &voter{id: fmt.Sprintf("v%d", i), dir: filepath.Join(t.TempDir(), "data"), raftAddr: freeAddr(t), apiAddr: ln.Addr().String(), tls: c.serverTLS != nil, ln: ln}
		c.voters = append(c.voters, v)
		c.start(i)
		if i == 0 {
			if err := v.node.Bootstrap(); err != nil {
				t.Fatal(err)
			}
			c.leader(5 * time.Second)
			waitFor(t, 5*time.Second, "the first voter records its API URL", func() bool {
				return v.node.State().Voters[v.id] == v.url()
			})
			continue
		}
		body := fmt.Sprintf(`{"id": %q, "raft_address": %q, "api": %q}`, v.id, v.raftAddr, v.url())
		code, out := doWith(t, c.client, "POST", c.voters[0].url()+"/v1/cluster/voters", testToken, "application/json", body)
		if code != http.StatusOK {
			t.Fatalf("join %s: %d %s", v.id, code, out)
		}
	}
	t.Cleanup(func() {
		for i := range c.voters {
			c.stop(i)
		}
	})
	return c
}

// logStore is the kind of log store the voters get.
func (c *cluster) logStore() string {
	if c.walSegment > 0 {
		return LogStoreWAL
	}
	return LogStoreBolt
}

// start (re)starts voter i from its data directory.
func (c *cluster) start(i int) {
	t := c.t
	t.Helper()
	v := c.voters[i]
	v.reg = prometheus.NewRegistry()
	var err error
	v.node, err = NewServer(ServerConfig{
		ID: v.id, DataDir: v.dir, RaftAddr: v.raftAddr, RaftSecret: c.raftSecret, APIURL: v.url(), Timing: c.timing,
		Allocators: newSeqAllocator, Logger: testLogger(t), Registerer: v.reg, ApplyTimeout: 5 * time.Second,
		SnapshotThreshold: c.snapshotThreshold, walSegmentSize: c.walSegment, LogStore: c.logStore(),
		DNSSECSecret: []byte(testDNSSECSecret),
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(APIConfig{Node: v.node, WriteTokens: []string{testToken}, OpenReads: true, Registerer: v.reg, StaleAfter: time.Second, MaxBodyBytes: c.maxBody, LeaderWait: time.Second, Client: c.client,
		MaxDecodes: c.maxDecodes, DecodeWait: c.decodeWait, MaxDocumentBytes: c.maxDocument})
	if err != nil {
		t.Fatal(err)
	}
	ln := v.ln
	v.ln = nil
	if ln == nil {
		waitFor(t, 5*time.Second, "the API port is free again", func() bool {
			ln, err = net.Listen("tcp", v.apiAddr)
			return err == nil
		})
	}
	v.srv = &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second, TLSConfig: c.serverTLS.Clone()} // http2 setup writes to it
	if c.serverTLS != nil {
		go v.srv.ServeTLS(ln, "", "")
	} else {
		go v.srv.Serve(ln)
	}
}

// stop shuts voter i down as a crash would leave it: its files stay.
func (c *cluster) stop(i int) {
	v := c.voters[i]
	if v.node == nil {
		return
	}
	v.srv.Close()
	if err := v.node.Close(); err != nil {
		c.t.Logf("close %s: %v", v.id, err)
	}
	v.node = nil
}

// leader waits for a leader among the running voters and returns it.
func (c *cluster) leader(within time.Duration) *voter {
	c.t.Helper()
	var l *voter
	waitFor(c.t, within, "a leader", func() bool {
		for _, v := range c.voters {
			if v.node != nil && v.node.IsLeader() {
				l = v
				return true
			}
		}
		return false
	})
	return l
}

// follower returns a running voter that is not the leader.
func (c *cluster) follower() *voter {
	for _, v := range c.voters {
		if v.node != nil && !v.node.IsLeader() {
			return v
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// waitFor waits until cond holds, for within on an idle machine scaled by the slowdown
// measured meanwhile (internal/calibrate).
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	m := calibrate.Start()
	defer m.Stop()
	for !cond() {
		if !m.Within(within) {
			t.Fatalf("timed out after %v of an idle machine (%v) waiting for %s", within, m.Reading(), what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

// do makes one request and returns the status code and body.
func do(t testing.TB, method, url, token, ctype, body string) (int, []byte) {
	t.Helper()
	return doWith(t, httpClient, method, url, token, ctype, body)
}

// doWith is do with a given client.
func doWith(t testing.TB, client *http.Client, method, url, token, ctype, body string) (int, []byte) {
	t.Helper()
	if client == nil {
		client = httpClient
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// mustWrite makes a write that must succeed and returns its index.
func mustWrite(t testing.TB, method, url, ctype, body string) uint64 {
	t.Helper()
	code, out := do(t, method, url, testToken, ctype, body)
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("%s %s: %d %s", method, url, code, out)
	}
	var res state.WriteResult
	if err := json.Unmarshal(out, &res); err != nil || res.Index == 0 {
		t.Fatalf("%s %s: bad answer %s (%v)", method, url, out, err)
	}
	return res.Index
}

// readState reads /v1/state with the given query.
func readStateAPI(t testing.TB, base, query string) (state.ReadMeta, *state.State) {
	t.Helper()
	code, out := do(t, "GET", base+"/v1/state"+query, "", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET state%s: %d %s", query, code, out)
	}
	var body struct {
		state.ReadMeta
		Data *state.State `json:"data"`
	}
	if err := json.Unmarshal(out, &body); err != nil {
		t.Fatal(err)
	}
	return body.ReadMeta, body.Data
}

func decodeError(t testing.TB, out []byte) state.ErrorBody {
	t.Helper()
	var e state.ErrorBody
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("not a JSON error: %s", out)
	}
	return e
}
