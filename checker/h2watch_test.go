package checker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2cAnswer serves h2c with prior knowledge: it reads the client's preface and frames until
// the request's HEADERS, then answers on its stream with the header block block, cut into
// frames of at most 16 KiB, which end the stream.
func h2cAnswer(t *testing.T, block []byte) func(ctx context.Context, c net.Conn) {
	return func(ctx context.Context, c net.Conn) {
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		var stream uint32
		for stream == 0 {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := f.(*http2.HeadersFrame); ok {
				stream = h.StreamID
			}
		}
		const frag = 16 << 10
		first := block[:min(len(block), frag)]
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndHeaders: len(block) <= frag, EndStream: true})
		for rest := block[len(first):]; len(rest) > 0; {
			n := min(len(rest), frag)
			fr.WriteContinuation(stream, n == len(rest), rest[:n])
			rest = rest[n:]
		}
		<-ctx.Done()
	}
}

// encodeHead is an HPACK header block of status 200, the gRPC content type and n fields.
func encodeHead(n int) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	for i := range n {
		enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-f%d", i), Value: strings.Repeat("v", 20), Sensitive: true})
	}
	return b.Bytes()
}

// TestH2HeadOverTheLimit: over h2c (a gRPC check), a head the HTTP/2 framer refuses for its
// size is reported in the limit's words, whichever way the framer refused it, and a header
// block that is merely malformed is not.
func TestH2HeadOverTheLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		block []byte
		limit bool
	}{
		{"many fields over the limit", encodeHead(2000), true},     // refused by size, decoded
		{"many fields far over the limit", encodeHead(8000), true}, // a frame over twice what is left
		{"malformed block", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}, false},
		{"within the limit", encodeHead(100), false},
	} {
		ap := rawServer(t, h2cAnswer(t, tt.block))
		c := checkFor("h2c", config.ProtocolGRPC, ap)
		c.Timeout = config.Duration(2 * time.Second)
		r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
		said := strings.Contains(r.Message, errHeadTooLarge.Error())
		if r.Healthy || said != tt.limit || tt.limit && r.Reason != ReasonProtocol {
			t.Errorf("%s (%d bytes): %s (%s); want the limit's message: %v", tt.name, len(tt.block), r.Reason, r.Message, tt.limit)
		} else {
			t.Logf("%s (%d bytes): %s (%s)", tt.name, len(tt.block), r.Reason, r.Message)
		}
	}
}
