package control

import "slices"

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
