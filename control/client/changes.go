package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/vigil-dns/vigil/control/state"
)

// Changes makes one read of what changed after index (GET /v1/changes, blocking up to wait;
// of a voter without it, an older version, GET /v1/state) and decodes the answer as it
// arrives, one item at a time: a delta, or the whole state. The voters are asked as by every
// call; an answer other than 200 is an *Error, one that cannot be decoded says "undecodable
// answer".
func (c *Client) Changes(ctx context.Context, index uint64, wait time.Duration) (*state.State, *state.Delta, error) {
	var last error
	for _, v := range c.voters {
		s, d, err := c.changesOf(ctx, v, index, wait)
		if err == nil {
			return s, d, nil
		}
		last = err
		if !Unavailable(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, nil, last
}

// changesOf reads what changed after index of the voter at base.
func (c *Client) changesOf(ctx context.Context, base string, index uint64, wait time.Duration) (*state.State, *state.Delta, error) {
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {wait.String()}}
	r := request{method: http.MethodGet, path: "/v1/changes", query: q}
	resp, err := c.open(ctx, base, r)
	legacy := err == nil && resp.StatusCode == http.StatusNotFound
	if legacy {
		resp.Body.Close()
		r.path = "/v1/state"
		resp, err = c.open(ctx, base, r)
	}
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
		return nil, nil, newError(r.method, base+r.path, resp.StatusCode, b)
	}
	s, d, err := state.ReadChanges(json.NewDecoder(bufio.NewReaderSize(resp.Body, 64<<10)), legacy)
	if err != nil {
		return nil, nil, fmt.Errorf("control client: GET %s: undecodable answer: %w", base+r.path, err)
	}
	return s, d, nil
}
