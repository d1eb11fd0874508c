package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// fillEvery sets every field of the value v points to, recursively, to a value other than
// its zero (strings from their field's name, numbers from n), so that a field an encoder
// forgets does not come back.
func fillEvery(t *testing.T, v reflect.Value, name string, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(name + "-é\"\\")
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) * -1000003)
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEvery(t, v.Elem(), name, n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillEvery(t, v.Index(i), name, n)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillEvery(t, k, name+"k"+string(rune('a'+i)), n)
			fillEvery(t, e, name, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fillEvery(t, v.Field(i), name+"."+v.Type().Field(i).Name, n)
		}
	default:
		t.Fatalf("%s: kind %s: teach fillEvery and the binary encoding", name, v.Kind())
	}
}

// TestBinaryCheckEveryField: a check with every field set (by reflection: a field added to
// config.Check and not to the binary encoding fails here) comes back the same, and so do
// the checks TestEncodeCommandSameCheck uses, nil and empty lists apart, -0 kept.
func TestBinaryCheckEveryField(t *testing.T) {
	var full config.Check
	n := 0
	fillEvery(t, reflect.ValueOf(&full).Elem(), "check", &n)
	checks := []config.Check{full, {},
		{ID: "empty", Headers: map[string]string{}, ExpectStatus: []config.StatusRange{}, Regions: []string{}, Children: []string{}},
		{ID: "neg", HealthyThreshold: math.Copysign(0, -1), Target: config.Target{Port: 1}, GRPC: &config.GRPCProbe{}, DNS: &config.DNSProbe{}},
	}
	for _, src := range []string{testDoc, scaleJSON(3)} {
		doc, err := decodeDocument([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, doc.Checks...)
	}
	if data, err := os.ReadFile("../examples/demo.yaml"); err == nil {
		doc, err := decodeDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, doc.Checks...)
	}
	for i := range checks {
		c := &checks[i]
		cmd := &state.Command{Op: state.OpPutCheck, Check: c, Create: i%2 == 0}
		data, err := encodeCommandBinary(cmd)
		if err != nil {
			t.Fatal(err)
		}
		var got state.Command
		if err := decodeCommand(data, &got); err != nil {
			t.Fatalf("check %q: %v", c.ID, err)
		}
		if !reflect.DeepEqual(&got, cmd) || math.Signbit(got.Check.HealthyThreshold) != math.Signbit(c.HealthyThreshold) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(cmd)
			t.Errorf("check %q:\n got  %s\n want %s", c.ID, gj, wj)
		}
	}
}

// TestBinaryCommands: every kind of command comes back from the binary encoding as the JSON
// encoding gives it back (the fields carried as JSON included), audit records with their
// time, and a batch of commands in both encodings.
func TestBinaryCommands(t *testing.T) {
	var info state.AuditInfo
	n := 0
	fillEvery(t, reflect.ValueOf(&info).Elem().FieldByName("Token"), "token", &n)
	info.Time = time.Date(2026, 12, 4, 18, 0, 0, 123456789, time.UTC)
	info.Method, info.Path, info.Summary, info.Via = "PUT", "/v1/checks/x", "put check x", "v1"
	doc, err := decodeDocument([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	check := doc.Checks[0]
	zone := doc.Zones[0]
	cmds := []*state.Command{
		{Op: state.OpPutCheck, Check: &check, Audit: &info},
		{Op: state.OpDeleteCheck, ID: "web", Audit: &info},
		{Op: state.OpPutZone, Zone: &zone, Create: true},
		{Op: state.OpPutRecordSet, ZoneName: zone.Name, RecordSet: &zone.RecordSets[0]},
		{Op: state.OpDeleteRecordSet, ZoneName: zone.Name, Name: "www", Type: "A"},
		{Op: state.OpApplyDocument, Document: doc},
		{Op: state.OpPutVoter, Voter: &state.Voter{ID: "v1", API: "http://127.0.0.1:1"}},
	}
	var subs [][]byte
	for _, cmd := range cmds {
		js, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		var want, got state.Command
		if err := decodeCommand(js, &want); err != nil {
			t.Fatal(err)
		}
		data, err := encodeCommandBinary(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeCommand(data, &got); err != nil {
			t.Fatalf("%s: %v", cmd.Op, err)
		}
		if !reflect.DeepEqual(got, want) || (got.Audit != nil && !got.Audit.Time.Equal(want.Audit.Time)) {
			t.Errorf("%s:\n got  %+v\n want %+v", cmd.Op, got, want)
		}
		subs = append(subs, js, data)
	}
	var batch state.Command
	if err := decodeCommand(encodeBatchBinary(subs), &batch); err != nil {
		t.Fatal(err)
	}
	if batch.Op != state.OpBatch || len(batch.Batch) != len(subs) {
		t.Fatalf("batch: %s of %d commands, want batch of %d", batch.Op, len(batch.Batch), len(subs))
	}
	for i, raw := range batch.Batch {
		if string(raw) != string(subs[i]) {
			t.Errorf("batch command %d changed", i)
		}
	}
}

// TestBinaryCheckProbeSwitches: a check without keep_alive and http2 is encoded in the
// layout of version 1, byte for byte, so that a voter of the release before reads it; one
// with them carries them after it (tagProbe), which that voter refuses rather than applying
// the check without them.
func TestBinaryCheckProbeSwitches(t *testing.T) {
	doc, err := decodeDocument([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	plain := doc.Checks[0]
	plain.KeepAlive, plain.HTTP2 = false, false
	base, err := encodeCommandBinary(&state.Command{Op: state.OpPutCheck, Check: &plain})
	if err != nil {
		t.Fatal(err)
	}
	for _, sw := range []struct {
		keepAlive, http2 bool
		bits             byte
	}{{true, false, probeKeepAlive}, {false, true, probeHTTP2}, {true, true, probeAll}} {
		c := plain
		c.KeepAlive, c.HTTP2 = sw.keepAlive, sw.http2
		data, err := encodeCommandBinary(&state.Command{Op: state.OpPutCheck, Check: &c})
		if err != nil {
			t.Fatal(err)
		}
		want := append(bytes.Clone(base[:len(base)-1]), tagProbe, sw.bits, tagEnd)
		if !bytes.Equal(data, want) {
			t.Errorf("keep_alive %v, http2 %v: encoded\n %x\nwant\n %x", sw.keepAlive, sw.http2, data, want)
		}
		var got state.Command
		if err := decodeCommand(data, &got); err != nil || got.Check.KeepAlive != sw.keepAlive || got.Check.HTTP2 != sw.http2 {
			t.Errorf("keep_alive %v, http2 %v: decoded %+v, %v", sw.keepAlive, sw.http2, got.Check, err)
		}
	}
}

// TestBinaryCommandDamaged: every truncation of a binary command, a repeated or unknown
// field and a later version are refused, never half-read and never a panic.
func TestBinaryCommandDamaged(t *testing.T) {
	var full config.Check
	n := 0
	fillEvery(t, reflect.ValueOf(&full).Elem(), "check", &n)
	data, err := encodeCommandBinary(&state.Command{Op: state.OpPutCheck, Check: &full, Audit: &state.AuditInfo{Time: time.Now(), Token: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(data); i++ {
		var c state.Command
		if err := decodeCommand(data[:i], &c); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded %+v", i, len(data), c)
		}
	}
	for name, bad := range map[string][]byte{
		"later version":     {binaryMagic, binaryVersion + 1, tagOp, 0},
		"unknown field":     {binaryMagic, binaryVersion, 30},
		"repeated field":    {binaryMagic, binaryVersion, tagCreate, tagCreate},
		"huge batch":        {binaryMagic, binaryVersion, tagBatch, 0xff, 0xff, 0xff, 0x0f},
		"own field as JSON": append([]byte{binaryMagic, binaryVersion, tagJSON, 14}, `{"op":"batch"}`...),
		"unknown switch":    {binaryMagic, binaryVersion, tagProbe, 4, 0},
		"no switch":         {binaryMagic, binaryVersion, tagProbe, 0, 0},
		"switch, no check":  {binaryMagic, binaryVersion, tagProbe, probeKeepAlive, 0},
	} {
		var c state.Command
		if err := decodeCommand(bad, &c); err == nil {
			t.Errorf("%s: decoded %+v", name, c)
		} else if name == "later version" && !strings.Contains(err.Error(), "upgrade") {
			t.Errorf("%s: %v, want it to say to upgrade", name, err)
		}
	}
}

// TestFSMAppliesBothEncodings: the state machine applies a log whose entries are JSON (as
// the release before wrote them), binary, and batches of both, to the same state.
func TestFSMAppliesBothEncodings(t *testing.T) {
	doc, err := decodeDocument([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	run := func(encode func(*state.Command) ([]byte, error), batch func([][]byte) []byte) *state.State {
		f := NewFSM(nil, nil)
		index := uint64(0)
		apply := func(data []byte) {
			index++
			res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(ApplyResult)
			if res.Err != nil {
				t.Fatalf("entry %d: %v", index, res.Err)
			}
			for i, err := range res.Batch {
				if err != nil {
					t.Fatalf("entry %d, command %d: %v", index, i, err)
				}
			}
		}
		enc := func(c *state.Command) []byte {
			b, err := encode(c)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		apply(enc(&state.Command{Op: state.OpApplyDocument, Document: doc}))
		var subs [][]byte
		for i := range 5 {
			c := doc.Checks[0]
			c.ID = "extra" + string(rune('a'+i))
			subs = append(subs, enc(&state.Command{Op: state.OpPutCheck, Check: &c, Audit: &state.AuditInfo{Time: time.Unix(1e9, 0).UTC(), Token: "t"}}))
		}
		apply(batch(subs))
		apply(enc(&state.Command{Op: state.OpDeleteCheck, ID: "extrac"}))
		return f.State()
	}
	jsonBatch := func(subs [][]byte) []byte {
		c := state.Command{Op: state.OpBatch}
		for _, s := range subs {
			c.Batch = append(c.Batch, s)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old := run(encodeCommand, jsonBatch)
	mixed := 0
	both := func(c *state.Command) ([]byte, error) {
		mixed++
		if mixed%2 == 0 {
			return encodeCommand(c)
		}
		return encodeCommandBinary(c)
	}
	for name, s := range map[string]*state.State{"binary": run(encodeCommandBinary, encodeBatchBinary), "mixed": run(both, encodeBatchBinary)} {
		var a, b strings.Builder
		if err := old.WriteJSON(&a); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s log: the state differs from the JSON log's", name)
		}
	}
}

// TestBinaryLogGate: a voter learns from the raft handshake whether the voter it dials reads
// the binary encoding: one of this release does, one of the release before (which offers no
// application protocol) does not, in either direction.
func TestBinaryLogGate(t *testing.T) {
	secret := testRaftSecret(t)
	newCodecs, oldCodecs := &peerCodecs{}, &peerCodecs{}
	a := testTransport(t, ServerConfig{ID: "a", RaftSecret: secret, codecs: newCodecs}, nil)
	b := testTransport(t, ServerConfig{ID: "b", RaftSecret: secret, codecs: &peerCodecs{}}, nil)
	offerBinaryLog = false
	old := testTransport(t, ServerConfig{ID: "old", RaftSecret: secret, codecs: oldCodecs}, nil)
	offerBinaryLog = true
	for _, to := range []raft.Transport{b, old} {
		if term, err := askVote(a, to); err != nil || term != 7 {
			t.Fatalf("vote to %s: term %d, err %v", to.LocalAddr(), term, err)
		}
	}
	if term, err := askVote(old, a); err != nil || term != 7 {
		t.Fatalf("vote from the old voter: term %d, err %v", term, err)
	}
	if !newCodecs.reads(b.LocalAddr()) {
		t.Error("a voter of this release is not known to read the binary log")
	}
	if newCodecs.reads(old.LocalAddr()) {
		t.Error("a voter of the release before is taken to read the binary log")
	}
	if oldCodecs.reads(a.LocalAddr()) {
		t.Error("the old voter recorded a binary log reader")
	}
}

// TestMixedPoolWritesJSON: while one voter is of the release before (its raft handshake
// offers no binary log), the leader writes JSON entries, which that voter reads; once it is
// replaced by one of this release, the leader writes binary entries, and every voter applies
// both.
func TestMixedPoolWritesJSON(t *testing.T) {
	c := &cluster{maxBody: 1 << 20, timing: testTiming}
	c.t = t
	c.raftSecret = testRaftSecret(t)
	offerBinaryLog = false // voter v2, started last, is "old"
	restore := func() { offerBinaryLog = true }
	t.Cleanup(restore)
	newClusterWithOld(t, c)
	restore()
	// write posts a check to the leader, again after a lost leadership (a loaded machine),
	// and returns the leader that took it and the entry it wrote.
	write := func(id string, port int) (*voter, []byte) {
		t.Helper()
		var leader *voter
		var idx uint64
		waitFor(t, 20*time.Second, "the leader to take "+id, func() bool {
			leader = c.leader(10 * time.Second)
			code, out := doWith(t, c.client, "POST", leader.url()+"/v1/checks", testToken, "application/json", checkJSON(id, port))
			if code == http.StatusConflict {
				t.Fatalf("%s was applied by an attempt whose answer was lost: %s", id, out)
			}
			if code != http.StatusCreated {
				return false
			}
			var r state.WriteResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			idx = r.Index
			return true
		})
		if leader.id == "v2" {
			t.Skip("the voter standing for the release before was elected: it writes what its own peers read")
		}
		var l raft.Log
		if err := leader.node.store.GetLog(idx, &l); err != nil {
			t.Fatal(err)
		}
		return leader, l.Data
	}
	leader, d := write("mixed-json", 1)
	if len(d) == 0 || d[0] != '{' {
		t.Fatalf("with a voter of the release before, the leader wrote %q, want JSON", d[:min(len(d), 8)])
	}
	if leader.node.binaryLog() {
		t.Fatal("the leader takes every voter to read the binary log")
	}
	c.stop(2)
	c.start(2) // now of this release
	waitFor(t, 20*time.Second, "the leader to learn that every voter reads the binary log", func() bool {
		l := c.leader(10 * time.Second)
		return l.id != "v2" && l.node.binaryLog()
	})
	if _, d = write("mixed-binary", 2); !isBinaryCommand(d) {
		t.Fatalf("with every voter of this release, the leader wrote %q, want the binary encoding", d[:min(len(d), 8)])
	}
	for _, v := range c.voters {
		waitFor(t, 10*time.Second, v.id+" to apply both writes", func() bool {
			s := v.node.State()
			_, a := s.CheckRef("mixed-json")
			_, b := s.CheckRef("mixed-binary")
			return a && b
		})
	}
}

// newClusterWithOld starts three voters as newClusterWith does, offerBinaryLog as the
// caller set it for the last one only.
func newClusterWithOld(t *testing.T, c *cluster) {
	old := offerBinaryLog
	offerBinaryLog = true
	for i := range 3 {
		if i == 2 {
			offerBinaryLog = old
		}
		v := &voter{id: fmt.Sprintf("v%d", i), dir: filepath.Join(t.TempDir(), "data"), raftAddr: freeAddr(t), apiAddr: freeAddr(t)}
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
		waitFor(t, 20*time.Second, "the join of "+v.id, func() bool { // again after a lost leadership
			code, _ := doWith(t, c.client, "POST", c.leader(10*time.Second).url()+"/v1/cluster/voters", testToken, "application/json", body)
			return code == http.StatusOK
		})
	}
	t.Cleanup(func() {
		for i := range c.voters {
			c.stop(i)
		}
	})
}
