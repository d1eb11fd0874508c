package gossip

import "github.com/hashicorp/memberlist"

// broadcast is one queued gossip message. Its name makes a newer message about the same thing
// replace it in memberlist's queue, so the queue holds at most one per (checker, check).
type broadcast struct {
	name string
	msg  []byte
}

var _ memberlist.NamedBroadcast = (*broadcast)(nil)

func newBroadcast(name string, msg []byte) *broadcast { return &broadcast{name: name, msg: msg} }

// Name implements memberlist.NamedBroadcast.
func (b *broadcast) Name() string { return b.name }

// Invalidates implements memberlist.Broadcast; names do the invalidating.
func (b *broadcast) Invalidates(memberlist.Broadcast) bool { return false }

// Message implements memberlist.Broadcast.
func (b *broadcast) Message() []byte { return b.msg }

// Finished implements memberlist.Broadcast.
func (b *broadcast) Finished() {}
