package checker

import (
	"errors"
	"net"
	"sync"

	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 framer of net/http refuses a response head over the header list size a probe
// advertises (MaxResponseHead) in three ways, none of which it exports: "header list larger
// than advertised limit" when it decoded the fields, a connection error PROTOCOL_ERROR when a
// frame of the head is more than twice what is left of the limit (it does not decode such a
// frame), and COMPRESSION_ERROR when one field is longer than the whole limit. h2Watch keeps
// the header blocks a connection reads, so that when the exchange fails, the prober can tell
// the head over the limit, which it reports in its documented words (errHeadTooLarge), from
// any other protocol error.

const (
	// h2HeaderListSize is the header list size the HTTP/2 transport advertises for
	// MaxResponseHead: net/http pads it for ten fields of 32 bytes of HPACK overhead each.
	h2HeaderListSize = MaxResponseHead + 10*32
	// h2HeaderTable is the HPACK dynamic table size a probe's client allows (the default).
	h2HeaderTable = 4096
	// maxWatchedHead bounds the header block bytes h2Watch keeps: more than this, encoded,
	// is more than the limit decoded (a field decodes to at least its encoded size).
	maxWatchedHead = 4 * MaxResponseHead
)

// HTTP/2 frame types and flags h2Watch reads (RFC 9113 §6).
const (
	h2FrameHeaders      = 0x1
	h2FrameContinuation = 0x9
	h2FlagEndHeaders    = 0x4
	h2FlagPadded        = 0x8
	h2FlagPriority      = 0x20
)

// h2Watch is a connection that follows the HTTP/2 frames read from it and keeps the
// fragments of their header blocks, up to maxWatchedHead bytes. It is read by the transport's
// read loop and asked (headTooLarge) after the exchange failed, maybe before that loop ended.
type h2Watch struct {
	net.Conn
	mu      sync.Mutex
	head    [9]byte // the frame header being read
	headN   int
	left    int    // bytes of the current frame's payload still to read
	keep    bool   // the current frame is part of a header block
	payload []byte // the current header frame's payload so far
	blocks  [][][]byte
	open    bool // the last block has not ended
	kept    int
	spilled bool // more than maxWatchedHead bytes of header blocks
}

func (w *h2Watch) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	w.mu.Lock()
	w.follow(b[:n])
	w.mu.Unlock()
	return n, err
}

// follow parses the frames in p, the next bytes read.
func (w *h2Watch) follow(p []byte) {
	for len(p) > 0 {
		if w.left == 0 && w.headN < len(w.head) {
			k := copy(w.head[w.headN:], p)
			w.headN += k
			p = p[k:]
			if w.headN < len(w.head) {
				return
			}
			w.left = int(w.head[0])<<16 | int(w.head[1])<<8 | int(w.head[2])
			typ := w.head[3]
			w.keep = typ == h2FrameHeaders || typ == h2FrameContinuation
			w.payload = w.payload[:0]
			if w.keep && w.kept+w.left > maxWatchedHead {
				w.spilled, w.keep = true, false
			}
			if w.left == 0 {
				w.frameDone()
				continue
			}
		}
		k := min(w.left, len(p))
		if w.keep {
			w.payload = append(w.payload, p[:k]...)
		}
		w.left -= k
		p = p[k:]
		if w.left == 0 {
			w.frameDone()
		}
	}
}

// frameDone files the frame just read: a header block's fragment, without its padding and
// priority fields.
func (w *h2Watch) frameDone() {
	typ, flags := w.head[3], w.head[4]
	w.headN = 0
	if !w.keep {
		return
	}
	frag := w.payload
	if typ == h2FrameHeaders {
		pad := 0
		if flags&h2FlagPadded != 0 && len(frag) > 0 {
			pad, frag = int(frag[0]), frag[1:]
		}
		if flags&h2FlagPriority != 0 && len(frag) >= 5 {
			frag = frag[5:]
		}
		frag = frag[:max(len(frag)-pad, 0)]
	}
	frag = append([]byte(nil), frag...)
	w.kept += len(frag)
	if typ == h2FrameHeaders || !w.open {
		w.blocks = append(w.blocks, nil)
	}
	last := len(w.blocks) - 1
	w.blocks[last] = append(w.blocks[last], frag)
	w.open = flags&h2FlagEndHeaders == 0
}

// headTooLarge reports whether the last header block read is one the framer refuses for its
// size, by the framer's rules: a field larger than what is left of the header list size, a
// field string longer than the whole size, or a fragment more than twice what is left.
func (w *h2Watch) headTooLarge() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.spilled {
		return true
	}
	if len(w.blocks) == 0 {
		return false
	}
	dec := hpack.NewDecoder(h2HeaderTable, nil)
	dec.SetMaxStringLength(h2HeaderListSize)
	for i, block := range w.blocks {
		remain, over := h2HeaderListSize, false
		dec.SetEmitFunc(func(f hpack.HeaderField) {
			if int(f.Size()) > remain {
				over = true
			}
			remain -= min(remain, int(f.Size()))
		})
		for _, frag := range block {
			if i == len(w.blocks)-1 && len(frag) > 2*remain {
				return true
			}
			if _, err := dec.Write(frag); err != nil {
				return errors.Is(err, hpack.ErrStringLength) && i == len(w.blocks)-1
			}
		}
		if i == len(w.blocks)-1 {
			return over
		}
		if dec.Close() != nil {
			return false
		}
	}
	return false
}
