package state

import (
	"cmp"
	"slices"
	"sort"

	"github.com/vigil-dns/vigil/internal/ptree"
)

// auditChunk is how many entries an audit log shares in one block.
const auditChunk = 64

// auditLog is the audit log as a persistent queue, oldest entry first: full blocks of
// auditChunk entries shared by every version that holds them, and a short tail copied on
// each append (at most auditChunk pointers). A version is never changed: appending or
// dropping makes a new one, so dry runs of a command on the same state never touch what
// another version holds.
type auditLog struct {
	blocks [][]*AuditEntry // full blocks, never changed
	head   int             // entries of blocks[0] dropped already
	tail   []*AuditEntry   // fewer than auditChunk entries, never changed
}

// Len returns how many entries the log holds.
func (l auditLog) Len() int { return len(l.blocks)*auditChunk - l.head + len(l.tail) }

// at returns the i-th entry held, oldest first.
func (l auditLog) at(i int) *AuditEntry {
	i += l.head
	if b := i / auditChunk; b < len(l.blocks) {
		return l.blocks[b][i%auditChunk]
	}
	return l.tail[i-len(l.blocks)*auditChunk]
}

// push returns the log with e appended.
func (l auditLog) push(e *AuditEntry) auditLog {
	tail := make([]*AuditEntry, len(l.tail)+1)
	copy(tail, l.tail)
	tail[len(l.tail)] = e
	if len(tail) < auditChunk {
		l.tail = tail
		return l
	}
	l.blocks = append(slices.Clip(l.blocks), tail)
	l.tail = nil
	return l
}

// pop returns the log without its oldest entry; the log is not empty.
func (l auditLog) pop() auditLog {
	if len(l.blocks) == 0 {
		l.tail = l.tail[1:]
		return l
	}
	if l.head++; l.head == auditChunk {
		l.blocks, l.head = l.blocks[1:], 0
	}
	return l
}

// auditStore is the audit log of one State: each retention group's entries as an
// auditLog, and the chain's state. Like auditLog it is a value never changed once
// published: add returns a new one that shares with it what it did not touch (the groups
// are a ptree.Map, so an add costs O(log groups) beside the group it appends to). The zero
// auditStore is an empty log whose chain starts at Seq 1.
type auditStore struct {
	groups      ptree.Map[auditLog]        // by retention group (the principal, or AuditOverflow)
	n           int                        // entries in all groups
	checkpoints ptree.Map[AuditCheckpoint] // by retention group; auditFolded: of groups gone
	chainStart  uint64                     // entries with Seq up to it predate the chain
	head        string                     // Hash of the newest entry; "" before the chain
}

// auditFolded is the checkpoint key that sums the checkpoints of groups that hold no entry
// any more, beyond maxAuditCheckpoints.
const auditFolded = ""

// maxAuditCheckpoints bounds the checkpoints kept apart (those of groups that still hold
// entries are never folded: there are at most MaxAuditPrincipals+1 of them).
const maxAuditCheckpoints = 2*MaxAuditPrincipals + 2

// AuditCheckpoint accounts for the chained entries that retention pruned from one
// retention group: how many, and the Seq and Hash of the newest of them. Retention prunes a
// group's entries oldest first, so every entry the group still holds is newer than Through.
type AuditCheckpoint struct {
	// Group is the retention group (a principal, AuditOverflow), or "" for the sum of the
	// checkpoints of groups that hold no entry any more.
	Group string `json:"group"`
	// Pruned counts the chained entries pruned from the group.
	Pruned uint64 `json:"pruned"`
	// Through and Hash are the Seq and Hash of the newest of them.
	Through uint64 `json:"through"`
	Hash    string `json:"hash"`
}

// Len returns how many entries the log holds.
func (st auditStore) Len() int { return st.n }

// add returns the log with e appended to its principal's group (AuditOverflow, set as
// e.Group, when MaxAuditPrincipals other groups are held), then pruned: the group to
// MaxAuditPerPrincipal entries, the log to MaxAuditEntries by taking from the group that
// holds the most (the first by name of those), and every group to the entries at most
// MaxAuditAge older than e. e must not be published yet.
func (st auditStore) add(e *AuditEntry) auditStore {
	tok := new(ptree.Token)
	g := e.Token
	if _, ok := st.groups.Get(g); !ok && g != AuditOverflow {
		named := st.groups.Len()
		if _, ok := st.groups.Get(AuditOverflow); ok {
			named--
		}
		if named >= MaxAuditPrincipals {
			g, e.Group = AuditOverflow, AuditOverflow
		}
	}
	l, _ := st.groups.Get(g)
	st.groups = st.groups.Set(tok, g, l.push(e))
	st.n++
	if e.Hash != "" {
		st.head = e.Hash
	}
	for l, _ := st.groups.Get(g); l.Len() > MaxAuditPerPrincipal; l, _ = st.groups.Get(g) {
		st = st.prune(tok, g)
	}
	for st.n > MaxAuditEntries {
		big, most := "", 0
		for k, l := range st.groups.All("") {
			if l.Len() > most {
				big, most = k, l.Len()
			}
		}
		st = st.prune(tok, big)
	}
	var old []string
	for k, l := range st.groups.All("") {
		if e.Time.Sub(l.at(0).Time) > MaxAuditAge {
			old = append(old, k)
		}
	}
	for _, k := range old {
		for l, ok := st.groups.Get(k); ok && e.Time.Sub(l.at(0).Time) > MaxAuditAge; l, ok = st.groups.Get(k) {
			st = st.prune(tok, k)
		}
	}
	return st
}

// prune returns the log without the oldest entry of group g (which holds one), counted in
// g's checkpoint when it was chained.
func (st auditStore) prune(tok *ptree.Token, g string) auditStore {
	l, _ := st.groups.Get(g)
	gone := l.at(0)
	if l = l.pop(); l.Len() == 0 {
		st.groups, _ = st.groups.Delete(tok, g)
	} else {
		st.groups = st.groups.Set(tok, g, l)
	}
	st.n--
	if gone.Seq <= st.chainStart || gone.Hash == "" {
		return st
	}
	cp, _ := st.checkpoints.Get(g)
	cp.Group, cp.Pruned, cp.Through, cp.Hash = g, cp.Pruned+1, gone.Seq, gone.Hash
	st.checkpoints = st.checkpoints.Set(tok, g, cp)
	if st.checkpoints.Len() > maxAuditCheckpoints {
		st = st.fold(tok)
	}
	return st
}

// fold sums the checkpoint of the group without entries whose Through is the oldest into
// the auditFolded checkpoint, which keeps the Through and Hash of the newer of the two.
func (st auditStore) fold(tok *ptree.Token) auditStore {
	var pick *AuditCheckpoint
	for k, cp := range st.checkpoints.All("") {
		if _, held := st.groups.Get(k); held || k == auditFolded {
			continue
		}
		if pick == nil || cp.Through < pick.Through {
			c := cp
			pick = &c
		}
	}
	if pick == nil {
		return st
	}
	sum, _ := st.checkpoints.Get(auditFolded)
	sum.Group, sum.Pruned = auditFolded, sum.Pruned+pick.Pruned
	if pick.Through > sum.Through {
		sum.Through, sum.Hash = pick.Through, pick.Hash
	}
	st.checkpoints, _ = st.checkpoints.Delete(tok, pick.Group)
	st.checkpoints = st.checkpoints.Set(tok, auditFolded, sum)
	return st
}

// entries returns the newest entries, at most limit of them (0: all), oldest first, of
// those with Seq below before (0: any).
func (st auditStore) entries(limit int, before uint64) []*AuditEntry {
	out := []*AuditEntry{}
	for _, l := range st.groups.All("") {
		end := l.Len()
		if before > 0 {
			end = sort.Search(l.Len(), func(i int) bool { return l.at(i).Seq >= before })
		}
		from := 0
		if limit > 0 && end > limit {
			from = end - limit
		}
		for i := from; i < end; i++ {
			out = append(out, l.at(i))
		}
	}
	slices.SortFunc(out, func(a, b *AuditEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// checkpointList returns the checkpoints in order of group.
func (st auditStore) checkpointList() []AuditCheckpoint {
	var out []AuditCheckpoint
	for _, cp := range st.checkpoints.All("") {
		out = append(out, cp)
	}
	return out
}

// loadAuditStore rebuilds a log from a snapshot's entries (in order of Seq) and chain
// state, without pruning: the snapshot holds what retention kept.
func loadAuditStore(entries []*AuditEntry, chainStart uint64, head string, cps []AuditCheckpoint) auditStore {
	tok := new(ptree.Token)
	st := auditStore{chainStart: chainStart, head: head}
	for _, e := range entries {
		g := e.group()
		if _, ok := st.groups.Get(g); !ok && g != AuditOverflow && st.groups.Len() >= MaxAuditPrincipals {
			g = AuditOverflow
		}
		l, _ := st.groups.Get(g)
		st.groups = st.groups.Set(tok, g, l.push(e))
		st.n++
	}
	for _, cp := range cps {
		st.checkpoints = st.checkpoints.Set(tok, cp.Group, cp)
	}
	return st
}
