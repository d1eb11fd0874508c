package state

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// The audit log's hash chain. Every entry carries the hash of the entry before it (Prev)
// and its own (Hash): SHA-256 over AuditHash's canonical encoding, which covers every field
// of the entry and Prev, so an entry's hash commits to the whole log before it. Retention
// prunes a group's entries oldest first and counts each one in the group's checkpoint
// (AuditCheckpoint). VerifyAudit checks a log as GET /v1/audit returns it:
//
//   - every chained entry's Hash is its AuditHash (an altered entry fails);
//   - each entry whose predecessor is held links to it (Prev = the predecessor's Hash), the
//     first chained entry has no Prev, and an entry that follows a checkpoint's Through
//     links to the checkpoint's Hash;
//   - the newest entry is held and its Hash is the head the log reports;
//   - the Seq numbers missing between the chain's start and the newest (the gaps) are as
//     many as the checkpoints say were pruned, none of them is held, and no group holds an
//     entry at or before its own checkpoint's Through.
//
// So a gap means entries that retention pruned, and nothing else: an entry removed, or a
// run of them, without its checkpoint counting it fails the count; an entry altered or
// reinserted fails its hash or its neighbour's link. The chain is not a signature: a
// party that can write the replicated log (a voter, or anyone holding raft's credentials)
// can rewrite it whole, hashes and checkpoints included. What catches that is a head kept
// elsewhere: a (Seq, Hash) printed by `vigil audit -verify` and recorded outside the
// cluster must still be the hash of that entry (while retention holds it) or, once pruned,
// be reached by the later entries' links.

// auditHashDomain starts the canonical encoding, naming its version.
const auditHashDomain = "vigil-audit-entry-v1"

// AuditHash returns the hex SHA-256 of e's canonical encoding: the domain, then Seq,
// Index, the time in Unix milliseconds, and the strings Op, Token, Via, Method, Path,
// Summary and Prev, each number as 8 bytes big-endian and each string as its length (8
// bytes) and its bytes. Hash and Group are not covered.
func AuditHash(e *AuditEntry) string {
	h := sha256.New()
	var n [8]byte
	num := func(v uint64) {
		binary.BigEndian.PutUint64(n[:], v)
		h.Write(n[:])
	}
	str := func(s string) {
		num(uint64(len(s)))
		h.Write([]byte(s))
	}
	str(auditHashDomain)
	num(e.Seq)
	num(e.Index)
	num(uint64(e.Time.UnixMilli()))
	for _, s := range []string{string(e.Op), e.Token, e.Via, e.Method, e.Path, e.Summary, e.Prev} {
		str(s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AuditReport is what VerifyAudit found in a log that verifies.
type AuditReport struct {
	// Entries is how many entries the log holds; Chained how many of them are chained
	// (the rest predate the chain).
	Entries, Chained int
	// Links is how many entries were checked against the hash of the entry before them.
	Links int
	// Pruned is how many chained entries the checkpoints account for, and Gaps the runs of
	// missing Seq numbers.
	Pruned uint64
	Gaps   int
	// Newest and Head are the newest entry's Seq and Hash.
	Newest uint64
	Head   string
}

// VerifyAudit checks the hash chain of a whole audit log (see the guarantee above): v must
// hold every entry (Retained of them). It returns the first broken link as an error.
func VerifyAudit(v AuditView) (AuditReport, error) {
	r := AuditReport{Entries: len(v.Entries), Newest: v.Newest, Head: v.Head}
	if v.Retained != len(v.Entries) {
		return r, fmt.Errorf("the log holds %d entries and the answer %d: ask for all of them (limit=%d)", v.Retained, len(v.Entries), MaxAuditEntries)
	}
	bySeq, firstOf, err := auditEntries(v, &r)
	if err != nil {
		return r, err
	}
	pruned, cpAt, err := auditCheckpoints(v, bySeq, firstOf)
	if err != nil {
		return r, err
	}
	firstGap, err := auditLinks(v, bySeq, cpAt, &r)
	if err != nil {
		return r, err
	}
	missing := v.Newest - v.ChainStart - uint64(r.Chained)
	if v.Newest < v.ChainStart {
		missing = 0
	}
	r.Pruned = pruned
	if missing != pruned {
		return r, fmt.Errorf("%d entries are missing from the chain (seq %d to %d, the first at %d) and the checkpoints account for %d pruned: entries were removed", missing, v.ChainStart+1, v.Newest, firstGap, pruned)
	}
	if v.Newest > v.ChainStart {
		e := bySeq[v.Newest]
		if e == nil || e.Hash != v.Head {
			return r, fmt.Errorf("the newest entry %d is not held, or its hash is not the head %s", v.Newest, v.Head)
		}
	}
	return r, nil
}

// auditEntries indexes the view's entries by Seq, checking that they rise and that each
// chained entry's hash is the hash of its contents; it counts the chained entries in r and
// returns each group's oldest held chained Seq.
func auditEntries(v AuditView, r *AuditReport) (map[uint64]*AuditEntry, map[string]uint64, error) {
	bySeq := make(map[uint64]*AuditEntry, len(v.Entries))
	firstOf := map[string]uint64{}
	var last uint64
	for _, e := range v.Entries {
		if e == nil || e.Seq <= last || e.Seq > v.Newest {
			return nil, nil, fmt.Errorf("entry after seq %d: not in increasing order of seq, or past the newest %d", last, v.Newest)
		}
		last = e.Seq
		bySeq[e.Seq] = e
		if e.Seq <= v.ChainStart {
			continue
		}
		r.Chained++
		if e.Hash == "" || AuditHash(e) != e.Hash {
			return nil, nil, fmt.Errorf("entry %d (%s by %s): its hash is not the hash of its contents: it was altered", e.Seq, e.Op, e.Token)
		}
		if _, ok := firstOf[e.group()]; !ok {
			firstOf[e.group()] = e.Seq
		}
	}
	return bySeq, firstOf, nil
}

// auditCheckpoints checks that each checkpoint stands for entries that are gone (its newest
// pruned entry is not held, nor any older entry of its group), and returns the entries they
// account for and the checkpoints by their newest pruned Seq.
func auditCheckpoints(v AuditView, bySeq map[uint64]*AuditEntry, firstOf map[string]uint64) (uint64, map[uint64]AuditCheckpoint, error) {
	var pruned uint64
	cpAt := map[uint64]AuditCheckpoint{}
	for _, cp := range v.Checkpoints {
		if cp.Through <= v.ChainStart || cp.Through > v.Newest || bySeq[cp.Through] != nil {
			return 0, nil, fmt.Errorf("checkpoint of %q: its newest pruned entry %d is held, or outside the chain", cp.Group, cp.Through)
		}
		if first, ok := firstOf[cp.Group]; ok && cp.Group != auditFolded && first <= cp.Through {
			return 0, nil, fmt.Errorf("checkpoint of %q: entry %d is held though the group was pruned through %d", cp.Group, first, cp.Through)
		}
		pruned += cp.Pruned
		cpAt[cp.Through] = cp
	}
	return pruned, cpAt, nil
}

// auditLinks walks the chain by Seq: each held entry links to the entry before it, or to
// the checkpoint that stands for it; it counts the links and the gaps in r and returns the
// first missing Seq.
func auditLinks(v AuditView, bySeq map[uint64]*AuditEntry, cpAt map[uint64]AuditCheckpoint, r *AuditReport) (uint64, error) {
	var firstGap uint64
	for seq := v.ChainStart + 1; seq <= v.Newest; seq++ {
		e := bySeq[seq]
		if e == nil {
			if bySeq[seq-1] != nil || seq == v.ChainStart+1 {
				r.Gaps++
			}
			if firstGap == 0 {
				firstGap = seq
			}
			continue
		}
		switch prev := bySeq[seq-1]; {
		case seq == v.ChainStart+1:
			if e.Prev != "" {
				return 0, fmt.Errorf("entry %d, the first of the chain, names a previous hash %s", seq, e.Prev)
			}
		case prev != nil:
			r.Links++
			if e.Prev != prev.Hash {
				return 0, fmt.Errorf("entry %d does not link to entry %d: prev %s, its hash %s", seq, seq-1, e.Prev, prev.Hash)
			}
		default:
			if cp, ok := cpAt[seq-1]; ok {
				r.Links++
				if e.Prev != cp.Hash {
					return 0, fmt.Errorf("entry %d does not link to the checkpoint of %q at %d: prev %s, checkpoint %s", seq, cp.Group, seq-1, e.Prev, cp.Hash)
				}
			}
		}
	}
	return firstGap, nil
}
