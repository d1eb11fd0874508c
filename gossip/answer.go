package gossip

import (
	"iter"
	"strconv"
)

// answer returns the messages that answer the rows a peer asked for, in the version of the
// ask, and a function to call once they are sent or dropped; no messages when there is
// nothing to answer. In version 2 it answers the changes since what the asker holds when this
// node can prove it holds them all (sync.go), else whole rows, a row larger than a page in
// pages (pages.go); nothing for a row the asker holds newer. Answers are batched in messages
// of at most a page (version 1: MaxMessageSize, and a row over it is not sent), up to
// maxAnswerBytes in all; what is left out is asked again. A version of a row paged to peer
// within pageIdle is not paged again: an asker asks again after askAgainAfter, and a
// million-check row's pages may take longer to arrive (the first run of
// TestLateLocationGetsPagedRow at 1,000,000 checks sent every page twice).
//
// A row to page is copied under the node's lock and its pages are encoded after it, one at a
// time as they are sent: at a million checks the encoding takes seconds, during which the node
// would take no message. And a node pages one row at a time, whoever asks: at a million checks
// a row copied to page is about 64 MB, and its pages 16 MB more with memberlist's buffers, so
// a location answering the repairs of several checkers at once held 0.6 to 1.6 GB of
// transfers (SCALE.md). A row asked for while another is paged is left out, and asked again.
func (n *Pool) answer(peer string, asks []ask, v byte) (msgs iter.Seq[[]byte], done func()) {
	limit := pageSize
	if v == wireV1 {
		limit = MaxMessageSize - 16
	}
	out, paged := n.answerLocked(peer, asks, v, limit)
	done = func() {}
	if paged != nil {
		done = func() {
			n.mu.Lock()
			n.paging = false
			n.mu.Unlock()
		}
	} else if len(out) == 0 {
		return nil, done
	}
	return func(yield func([]byte) bool) {
		for _, m := range out {
			if !yield(m) {
				return
			}
		}
		if paged != nil {
			for m := range paged.messages(v, limit-16) {
				if !yield(m) {
					return
				}
			}
		}
	}, done
}

// answerLocked is answer under the node's lock: the messages it encodes there, and the row to
// page, if any (then the node is paging until answer's done is called).
func (n *Pool) answerLocked(peer string, asks []ask, v byte, limit int) ([][]byte, *pagedRow) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.cfg.Now()
	var out [][]byte
	var paged *pagedRow
	var rows []*fullRow
	var since []*sinceRow
	size, total := 0, 0
	flush := func() {
		if len(rows)+len(since) > 0 {
			out = append(out, encodeRows(v, rows, since))
		}
		rows, since, size = nil, nil, 0
	}
	for _, a := range asks {
		if total >= maxAnswerBytes {
			break
		}
		key := pagedKey(peer, a.checker, n.table)
		if t, ok := n.paged[key]; ok && now.Sub(t) < pageIdle {
			continue // its pages are on their way: an ask again before they arrived
		}
		fr, sr, p := n.table.answerPlan(a, v, limit-16, n.rng.Uint64())
		var s int
		switch {
		case p != nil:
			if n.paging {
				continue // one row paged at a time: asked again
			}
			if len(n.paged) >= maxPaged {
				for k, t := range n.paged {
					if now.Sub(t) >= pageIdle {
						delete(n.paged, k)
					}
				}
			}
			if len(n.paged) < maxPaged {
				n.paged[key] = now
			}
			total += p.len() * minRowEntry // at least
			paged, n.paging = p, true
			continue
		case sr != nil:
			s = len(appendSince(nil, sr))
		case fr != nil:
			s = len(appendRow(nil, fr))
		default:
			continue
		}
		if s > limit-16 {
			continue // a version 1 asker reads no pages
		}
		if size+s > limit-16 {
			flush()
		}
		size += s
		total += s
		if sr != nil {
			since = append(since, sr)
		} else {
			rows = append(rows, fr)
		}
	}
	flush()
	return out, paged
}

// maxPaged bounds the paged answers a node remembers.
const maxPaged = 64

// pagedKey names an answer of checker's row as table holds it now, to peer.
func pagedKey(peer, checker string, t *Table) string {
	gen, seq, _ := t.holds(checker)
	return peer + "\x00" + checker + "\x00" + strconv.FormatUint(gen, 10) + "." + strconv.FormatUint(seq, 10)
}
