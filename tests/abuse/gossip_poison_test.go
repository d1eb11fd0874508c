package abuse

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/gossip"
)

// aliveWire is memberlist's alive message as it travels (msgpack, fields by name).
type aliveWire struct {
	Incarnation uint32
	Node        string
	Addr        []byte
	Port        uint16
	Meta        []byte
	Vsn         []uint8
}

// aliveMsgType is memberlist's message type byte of an alive message (v0.7.0, net.go: ping,
// indirect ping, ack, suspect, alive).
const aliveMsgType = 4

// poisonedAlive builds one encrypted alive packet of the kind i%4: an empty name without
// versions (what the finding sent), a name with current protocol version 0, a name whose
// delegate versions no node holds, and a name whose metadata does not decode.
func poisonedAlive(t *testing.T, key []byte, i int, port uint16) []byte {
	t.Helper()
	a := aliveWire{Incarnation: uint32(i + 1), Addr: net.IPv4(127, 0, 0, 1).To4(), Port: port,
		Meta: []byte{1, 1, 0, 2, 'r', '1', 0}, Vsn: []uint8{1, 5, 2, 0, 0, 0}}
	switch i % 4 {
	case 0:
		a.Node, a.Meta, a.Vsn = "", nil, nil
	case 1:
		a.Node, a.Vsn = "poison-pcur", []uint8{1, 5, 0, 0, 0, 0}
	case 2:
		a.Node, a.Vsn = "poison-dmin", []uint8{1, 5, 2, 7, 0, 0}
	case 3:
		a.Node, a.Meta = "poison-meta", []byte{0xff, 0xff}
	}
	var msg bytes.Buffer
	msg.WriteByte(aliveMsgType)
	if err := codec.NewEncoder(&msg, &codec.MsgpackHandle{}).Encode(&a); err != nil {
		t.Fatal(err)
	}
	// memberlist's encryption version 1: the version byte, a 12-byte nonce, AES-GCM of the
	// message with the (empty) label as additional data.
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 1+12, 1+12+msg.Len()+gcm.Overhead())
	out[0] = 1
	_, _ = rand.Read(out[1:13])
	return gcm.Seal(out, out[1:13], msg.Bytes(), nil)
}

// poisonFlood sends poisoned alive packets to addr, one a millisecond, until stop is closed
// or max are sent; it returns how many it sent.
func poisonFlood(t *testing.T, addr string, max int, stop <-chan struct{}, sent *atomic.Int64) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	// The announced address: a port that nothing listens on.
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Error(err)
		return
	}
	port := uint16(l.LocalAddr().(*net.UDPAddr).Port)
	_ = l.Close()
	for i := range max {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := c.Write(poisonedAlive(t, poolKey, i, port)); err == nil {
			sent.Add(1)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAbuseGossipPoisonedAlive: a holder of the gossip key sends authenticated alive
// messages for nodes that cannot exist (an empty name without versions, current protocol
// version 0, delegate versions no node holds, metadata that does not decode) to a node of
// an encrypted two-node pool, and goes on while a fresh node joins. The join must succeed
// and the node's log stay bounded. The control floods memberlist v0.7.0 with the key and no
// admission delegate, as nodes ran before: the fresh node's join is refused
// ("incompatible").
func TestAbuseGossipPoisonedAlive(t *testing.T) {
	const before, most = 1000, 4000
	logs := &levelCounter{level: slog.LevelWarn, prefix: "refused members"}
	reg := prometheus.NewRegistry()
	newPool := func(id string, reg prometheus.Registerer, l *slog.Logger) *gossip.Pool {
		p, err := gossip.New(gossip.Config{ID: id, Region: "r1", Roles: gossip.RoleLocation, Version: "abuse",
			Keys: [][]byte{poolKey}, Profile: gossip.ProfileLocal, BindAddr: "127.0.0.1", Registerer: reg, Logger: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Shutdown)
		return p
	}
	v1 := newPool("v1", reg, slog.New(logs))
	v2 := newPool("v2", nil, logger())
	if _, err := v2.Join(v1.Addr()); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); poisonFlood(t, v1.Addr(), most, stop, &sent) }()
	waitFor(10*time.Second, func() bool { return sent.Load() >= before })
	fresh := newPool("fresh", nil, logger())
	joins, joinErr := 0, error(nil)
	for range 3 {
		if _, err := fresh.Join(v1.Addr()); err != nil {
			joinErr = err
			continue
		}
		joins++
	}
	close(stop)
	<-done
	refused := 0.0
	waitFor(2*time.Second, func() bool {
		refused = counterSum(reg, "vigil_gossip_members_refused_total")
		return refused >= float64(sent.Load())*0.9
	})
	waitFor(5*time.Second, func() bool { return len(v1.Members()) == 3 })
	members := len(v1.Members())
	if !waitFor(5*time.Second, func() bool { return len(v2.Members()) == 3 }) {
		t.Errorf("v2 holds %d members, want 3: %v", len(v2.Members()), v2.Members())
	}
	lines := int(logs.n.Load())

	// Control: memberlist with the key and no admission delegate.
	kr, err := memberlist.NewKeyring([][]byte{poolKey}, poolKey)
	if err != nil {
		t.Fatal(err)
	}
	ctlLines := &lineCounter{match: "memberlist:"}
	newML := func(name string, out *lineCounter) *memberlist.Memberlist {
		mc := memberlist.DefaultLocalConfig()
		mc.Name, mc.BindAddr, mc.BindPort, mc.Keyring = name, "127.0.0.1", 0, kr
		mc.LogOutput = out
		ml, err := memberlist.Create(mc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ml.Shutdown() })
		return ml
	}
	victim := newML("control", ctlLines)
	var ctlSent atomic.Int64
	stop, done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		poisonFlood(t, victim.LocalNode().Address(), most, stop, &ctlSent)
	}()
	waitFor(10*time.Second, func() bool { return ctlSent.Load() >= before })
	ctlFresh := newML("control-fresh", &lineCounter{match: "memberlist:"})
	ctlJoins, ctlErr := 0, error(nil)
	for range 3 {
		if _, err := ctlFresh.Join([]string{victim.LocalNode().Address()}); err != nil {
			ctlErr = err
			continue
		}
		ctlJoins++
	}
	close(stop)
	<-done
	t.Logf("defended: %d sent, %v refused, joins %d of 3 (last error %v), %d members, %d log lines; control: %d sent, joins %d of 3 (%v), %d memberlist lines",
		sent.Load(), refused, joins, joinErr, members, lines, ctlSent.Load(), ctlJoins, ctlErr, ctlLines.n.Load())

	row(t, "poisoned membership: a holder of the gossip key sends authenticated alive messages for nodes that cannot exist (empty name without versions, current protocol version 0, delegate versions 7..0, metadata that does not decode) at a node of an encrypted pool, one a millisecond, while a fresh node joins three times",
		fmt.Sprintf("%s alive messages", itoa(int(sent.Load()))),
		fmt.Sprintf("joins refused %d of 3; poisoned members stored 0 (%d members: the pool and the fresh node); %s counted in vigil_gossip_members_refused_total; log lines at warning or above %d (one summary a 10 s) (control, memberlist without the admission delegate: joins refused %d of 3, %q; %s log lines)",
			3-joins, members, itoa(int(refused)), lines, 3-ctlJoins, errLine(ctlErr, "incompatible"), itoa(int(ctlLines.n.Load()))))
	if joins != 3 {
		t.Errorf("the fresh node joined %d of 3 times under the flood: %v", joins, joinErr)
	}
	if members != 3 {
		t.Errorf("v1 holds %d members, want 3 (v1, v2, fresh): %v", members, v1.Members())
	}
	if refused < float64(sent.Load())*0.9 {
		t.Errorf("refused %v of %d poisoned alive messages", refused, sent.Load())
	}
	if lines > 3 || logs.others.Load() > 0 {
		t.Errorf("%d log lines at warning or above (%d not the summary) for %d poisoned messages, want at most 3", lines, logs.others.Load(), sent.Load())
	}
	if ctlJoins == 3 || ctlErr == nil || !strings.Contains(ctlErr.Error(), "incompatible") {
		t.Errorf("control: memberlist without the delegate joined %d of 3 (%v), so the attack does not attack", ctlJoins, ctlErr)
	}
}

// counterSum sums a counter over all its labels.
func counterSum(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// errLine is the line of err's text that holds match (memberlist's join errors are lists),
// its first line if none does, "" for nil.
func errLine(err error, match string) string {
	if err == nil {
		return ""
	}
	lines := strings.Split(err.Error(), "\n")
	for _, l := range lines {
		if strings.Contains(l, match) {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "* "))
		}
	}
	return lines[0]
}
