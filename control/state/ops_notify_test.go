package state

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func notifyCmd(n NotifyCommand) *Command { return &Command{Op: OpNotify, Notify: &n} }

// TestNotifyFiresOnce: an alert fires once however often it is asked to (an old leader and a
// new one), repeats only in order, resolves once, and deliveries empty the outbox; the state
// survives a snapshot.
func TestNotifyFiresOnce(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fire := AlertChange{Rule: "down", Check: "web", Receivers: []string{"a", "b"}, Summary: "web down"}
	s := Empty()
	apply := func(c *Command, idx uint64) {
		t.Helper()
		e, err := ApplyCommand(s, c, idx)
		if err != nil {
			t.Fatal(err)
		}
		s = e.Next
	}
	apply(notifyCmd(NotifyCommand{At: at, Fire: []AlertChange{fire}}), 5)
	apply(notifyCmd(NotifyCommand{At: at.Add(time.Second), Fire: []AlertChange{fire}}), 6)
	out, _ := s.Outbox()
	if len(out) != 1 || out[0].Key != "down/web/5/firing" || len(s.Alerts()) != 1 {
		t.Fatalf("after two fires: outbox %+v alerts %+v", out, s.Alerts())
	}
	apply(notifyCmd(NotifyCommand{At: at, Repeat: []AlertChange{{Rule: "down", Check: "web", Repeat: 2}}}), 7)
	apply(notifyCmd(NotifyCommand{At: at, Repeat: []AlertChange{{Rule: "down", Check: "web", Repeat: 1}}}), 8)
	apply(notifyCmd(NotifyCommand{At: at, Repeat: []AlertChange{{Rule: "down", Check: "web", Repeat: 1}}}), 9)
	apply(notifyCmd(NotifyCommand{At: at, Resolve: []AlertChange{{Rule: "down", Check: "web"}}}), 10)
	apply(notifyCmd(NotifyCommand{At: at, Resolve: []AlertChange{{Rule: "down", Check: "web"}}}), 11)
	out, _ = s.Outbox()
	var keys []string
	for _, n := range out {
		keys = append(keys, n.Key)
	}
	want := []string{"down/web/5/firing", "down/web/5/repeat-1", "down/web/5/resolved"}
	if len(keys) != len(want) || keys[0] != want[0] || keys[1] != want[1] || keys[2] != want[2] || len(s.Alerts()) != 0 {
		t.Fatalf("keys %v, want %v; alerts %v", keys, want, s.Alerts())
	}
	apply(notifyCmd(NotifyCommand{At: at, Delivered: []Delivery{{Key: want[0], Receiver: "a"}}}), 12)
	var buf bytes.Buffer
	if err := s.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadState(&buf)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = back.Outbox()
	if len(out) != 3 || len(out[0].Pending) != 1 || out[0].Pending[0] != "b" {
		t.Fatalf("after the snapshot: %+v", out)
	}
	s = back
	for _, k := range want {
		for _, r := range []string{"a", "b"} {
			apply(notifyCmd(NotifyCommand{At: at, Delivered: []Delivery{{Key: k, Receiver: r}}}), 13)
		}
	}
	if out, _ = s.Outbox(); len(out) != 0 {
		t.Fatalf("delivered, still in the outbox: %+v", out)
	}
}

// TestNotifyBounds: beyond MaxAlerts a firing is dropped and counted while the command's
// resolves still apply; a full outbox drops its oldest notification.
func TestNotifyBounds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fires := make([]AlertChange, MaxAlerts)
	for i := range fires {
		fires[i] = AlertChange{Rule: "r", Check: fmt.Sprintf("c%d", i)}
	}
	e, err := ApplyCommand(Empty(), notifyCmd(NotifyCommand{At: at, Fire: fires}), 2)
	if err != nil {
		t.Fatal(err)
	}
	e, err = ApplyCommand(e.Next, notifyCmd(NotifyCommand{At: at, Fire: []AlertChange{{Rule: "r", Check: "extra", Receivers: []string{"x"}}},
		Resolve: []AlertChange{{Rule: "r", Check: "c0"}}}), 3)
	if err != nil {
		t.Fatal(err)
	}
	_, dropped := e.Next.Outbox()
	if n := len(e.Next.Alerts()); n != MaxAlerts-1 || dropped != 1 {
		t.Fatalf("alerts %d, dropped %d; want %d and 1", n, dropped, MaxAlerts-1)
	}
	s := Empty()
	for i := range MaxOutbox + 3 {
		e, err := ApplyCommand(s, notifyCmd(NotifyCommand{At: at, Fire: []AlertChange{{Rule: "r", Check: fmt.Sprintf("o%d", i), Receivers: []string{"x"}}}}), uint64(10+i))
		if err != nil {
			t.Fatal(err)
		}
		s = e.Next
	}
	out, dropped := s.Outbox()
	if len(out) != MaxOutbox || dropped != 3 || out[0].Check != "o3" {
		t.Fatalf("outbox %d (first %s), dropped %d", len(out), out[0].Check, dropped)
	}
}
