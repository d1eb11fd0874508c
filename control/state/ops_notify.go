package state

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// OpNotify records what the notification sender decided: alerts that fire, repeat or
// resolve, and deliveries that are done. Applying it is the gate that makes each
// notification one event network-wide: an alert that already fires does not fire again,
// whichever voter (an old leader, a new one) asks.
const OpNotify Op = "notify"

// OpPutNotifications replaces the document's notifications (receivers and rules) and
// nothing else.
const OpPutNotifications Op = "put_notifications"

// Bounds of the notification state.
const (
	// MaxAlerts bounds the alerts that fire at once; an alert that would fire beyond it is
	// not recorded (counted as a dropped notification) until some resolve.
	MaxAlerts = 10000
	// MaxOutbox bounds the notifications waiting for delivery; the oldest is dropped (and
	// counted) to make room.
	MaxOutbox = 1024
)

// The kinds of notification.
const (
	KindFiring   = "firing"
	KindResolved = "resolved"
)

// Alert is one rule's alert about one check (and, for a regional rule, one location) while
// it fires.
type Alert struct {
	// Key names the alert: rule/check, or rule/check@location (AlertKey).
	Key string `json:"key"`
	// Rule, Check and Location say what fires; Location is empty for a global rule.
	Rule     string `json:"rule"`
	Check    string `json:"check"`
	Location string `json:"location,omitempty"`
	// Episode is the raft index at which the alert fired: it tells one firing from the next.
	Episode uint64 `json:"episode"`
	// Since is when it fired, by the sender's clock.
	Since time.Time `json:"since"`
	// Repeats counts the repeated firing notifications sent since.
	Repeats int `json:"repeats,omitempty"`
	// Receivers are the receivers its notifications go to.
	Receivers []string `json:"receivers"`
}

// AlertKey returns the key of the alert of rule about check, at location for a regional
// rule ("" for a global one).
func AlertKey(rule, check, location string) string {
	k := rule + "/" + check
	if location != "" {
		k += "@" + location
	}
	return k
}

// Notification is one event to deliver: an alert fired, fired again (repeat) or resolved.
type Notification struct {
	// Key is the event's idempotency key, the same on every delivery attempt by any voter:
	// the alert key, its episode and the kind ("web-down/web/17/firing", ".../17/repeat-2",
	// ".../17/resolved").
	Key string `json:"key"`
	// Kind is firing or resolved (a repeat is firing).
	Kind string `json:"kind"`
	// Alert is the alert key; Rule, Check and Location as in Alert.
	Alert    string `json:"alert"`
	Rule     string `json:"rule"`
	Check    string `json:"check"`
	Location string `json:"location,omitempty"`
	// Episode is the alert's episode; Repeat the repeat's number (0: the first firing).
	Episode uint64 `json:"episode"`
	Repeat  int    `json:"repeat,omitempty"`
	// Since is when the alert fired; At when this event was decided.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Unhealthy are the locations that held the check unhealthy when the event was decided.
	Unhealthy []string `json:"unhealthy,omitempty"`
	// Summary says the event in one sentence.
	Summary string `json:"summary"`
	// Pending are the receivers it is not yet delivered to.
	Pending []string `json:"pending"`
}

// NotifyCommand is the body of an OpNotify command.
type NotifyCommand struct {
	// At is when the sender decided, by its clock.
	At time.Time `json:"at"`
	// Fire, Repeat and Resolve are the alert changes decided.
	Fire    []AlertChange `json:"fire,omitempty"`
	Repeat  []AlertChange `json:"repeat,omitempty"`
	Resolve []AlertChange `json:"resolve,omitempty"`
	// Delivered are the deliveries done (or given up).
	Delivered []Delivery `json:"delivered,omitempty"`
}

// AlertChange is one alert that fires, repeats or resolves.
type AlertChange struct {
	// Rule, Check and Location name the alert.
	Rule     string `json:"rule"`
	Check    string `json:"check"`
	Location string `json:"location,omitempty"`
	// Receivers are told (fire); for a repeat and a resolve, the alert's receivers are, and
	// none when Silent.
	Receivers []string `json:"receivers,omitempty"`
	// Repeat is the number of a repeat: the alert's Repeats + 1, or the repeat is dropped.
	Repeat int `json:"repeat,omitempty"`
	// Silent resolves without a notification.
	Silent bool `json:"silent,omitempty"`
	// Unhealthy and Summary describe the event.
	Unhealthy []string `json:"unhealthy,omitempty"`
	Summary   string   `json:"summary,omitempty"`
}

// Delivery says that a notification reached a receiver, or was given up for it.
type Delivery struct {
	// Key is the notification's key; Receiver the receiver's name.
	Key      string `json:"key"`
	Receiver string `json:"receiver"`
}

// applyNotify applies an OpNotify command at index: a pure function of the state.
func applyNotify(s *State, c *Command, index uint64) (*Edit, error) {
	n := c.Notify
	if n == nil {
		return nil, errors.New("control: notify needs its changes")
	}
	at := timeOf(n.At)
	o := cloneOps(s.opsOrEmpty())
	for _, f := range n.Fire {
		key := AlertKey(f.Rule, f.Check, f.Location)
		if o.Alerts[key] != nil {
			continue // fires already: one event, whoever asks again
		}
		if len(o.Alerts) >= MaxAlerts {
			o.Dropped++ // its notification is dropped; the command's other changes still apply
			continue
		}
		a := &Alert{Key: key, Rule: f.Rule, Check: f.Check, Location: f.Location, Episode: index, Since: at,
			Receivers: slices.Clone(f.Receivers)}
		o.Alerts[key] = a
		o.enqueue(a, KindFiring, 0, at, f)
	}
	for _, f := range n.Repeat {
		key := AlertKey(f.Rule, f.Check, f.Location)
		a := o.Alerts[key]
		if a == nil || f.Repeat != a.Repeats+1 {
			continue
		}
		next := *a
		next.Repeats = f.Repeat
		o.Alerts[key] = &next
		o.enqueue(&next, KindFiring, f.Repeat, at, f)
	}
	for _, f := range n.Resolve {
		key := AlertKey(f.Rule, f.Check, f.Location)
		a := o.Alerts[key]
		if a == nil {
			continue
		}
		delete(o.Alerts, key)
		if !f.Silent {
			o.enqueue(a, KindResolved, 0, at, f)
		}
	}
	for _, d := range n.Delivered {
		o.delivered(d)
	}
	e := s.Edit(index)
	e.Next.ops = o
	return e, nil
}

// enqueue adds a's notification of kind to the outbox, dropping the oldest when it is full.
func (o *opsState) enqueue(a *Alert, kind string, repeat int, at time.Time, f AlertChange) {
	if len(a.Receivers) == 0 {
		return
	}
	key := fmt.Sprintf("%s/%d/%s", a.Key, a.Episode, kind)
	if repeat > 0 {
		key = fmt.Sprintf("%s/%d/repeat-%d", a.Key, a.Episode, repeat)
	}
	if len(o.Outbox) >= MaxOutbox {
		o.Outbox = slices.Delete(o.Outbox, 0, len(o.Outbox)-MaxOutbox+1)
		o.Dropped++
	}
	o.Outbox = append(o.Outbox, &Notification{Key: key, Kind: kind, Alert: a.Key, Rule: a.Rule, Check: a.Check,
		Location: a.Location, Episode: a.Episode, Repeat: repeat, Since: a.Since, At: at,
		Unhealthy: slices.Clone(f.Unhealthy), Summary: f.Summary, Pending: slices.Clone(a.Receivers)})
}

// delivered removes d's receiver from its notification's pending list, and the notification
// once none is left.
func (o *opsState) delivered(d Delivery) {
	for i, n := range o.Outbox {
		if n.Key != d.Key {
			continue
		}
		j := slices.Index(n.Pending, d.Receiver)
		if j < 0 {
			return
		}
		next := *n
		next.Pending = slices.Delete(slices.Clone(n.Pending), j, j+1)
		if len(next.Pending) == 0 {
			o.Outbox = slices.Delete(o.Outbox, i, i+1)
		} else {
			o.Outbox[i] = &next
		}
		return
	}
}

// Alerts returns the alerts that fire, sorted by key; the caller must not change them.
func (s *State) Alerts() []*Alert {
	o := s.opsOrEmpty()
	out := make([]*Alert, 0, len(o.Alerts))
	for _, a := range o.Alerts {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Alert) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return out
}

// Outbox returns the notifications waiting for delivery, oldest first, and how many a full
// outbox dropped; the caller must not change them.
func (s *State) Outbox() ([]*Notification, uint64) {
	o := s.opsOrEmpty()
	return o.Outbox, o.Dropped
}
