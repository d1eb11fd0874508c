package checker

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// matchResponse reports whether match occurs in the first config.BodyMatchLimit bytes of
// resp's body, as the body is meant to be read: a body the server compressed with gzip
// although the probe asked for none is decompressed first, and one in a coding the probe
// cannot read is an error, not a mismatch.
func (p *Prober) matchResponse(resp *http.Response, match, buf []byte) (bool, error) {
	body := io.Reader(resp.Body)
	switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		if resp.Request != nil && resp.Request.Method == http.MethodHead || resp.ContentLength == 0 {
			break
		}
		zr, err := p.gzipReader(resp.Body)
		if errors.Is(err, io.EOF) {
			return false, nil // an empty body, however it is labelled
		}
		if err != nil {
			// Not the cut of a stream (its reads report that): a body that is not gzip.
			return false, fmt.Errorf("the body is labelled gzip but is not: %v", err)
		}
		defer p.gzips.Put(zr)
		body = zr
	default:
		return false, fmt.Errorf("the body is encoded as %q, which the probe did not ask for (it sends Accept-Encoding: identity) and cannot decode", ce)
	}
	return matchBody(body, match, buf)
}

// gzipReader returns a pooled gzip reader of r.
func (p *Prober) gzipReader(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := p.gzips.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			p.gzips.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// matchBody reads at most BodyMatchLimit bytes of body into buf and reports whether match
// occurs in them. It stops as soon as match is found, so a slow body that has already shown
// the match does not wait for the rest; an error after a match is not one. A body that ends
// early is a mismatch; a body whose framing fails is an error.
func matchBody(body io.Reader, match, buf []byte) (bool, error) {
	buf = slices.Grow(buf[:0], config.BodyMatchLimit)
	for len(buf) < config.BodyMatchLimit {
		n, err := body.Read(buf[len(buf):config.BodyMatchLimit])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, match) {
			return true, nil
		}
		switch {
		case errors.Is(err, io.EOF):
			return false, nil
		case err != nil:
			return false, err
		}
	}
	return false, nil
}
