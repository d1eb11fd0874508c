// Package client is the Go client of the control plane's HTTP API (package control, described
// in api/openapi.yaml). One Client, built from the voters' base URLs, a bearer token and an
// optional TLS configuration, has a typed method per operation. Every call takes a context,
// reads a bounded answer, and returns an *Error for an answer that is not a success. The
// Watcher that data-plane nodes embed (watcher.go, with its disk copy in cache.go) follows the
// configuration through a Client's change feed (Changes), and RunWriteLoad (load.go) measures
// the API's writes. The package links no raft: its values are package control/state's.
//
// A call asks the voters in the order given and moves on to the next one only when a voter
// could not answer it: the voter could not be reached or the connection broke, or it answered
// 502, 503 or 504 (it knows no leader yet, or could not reach it). Any voter forwards a write
// or a consistent read to the leader, so the first real answer is the cluster's. A caller that
// must wait for a cluster that is starting asks again while Unavailable(err) holds.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-dns/vigil/control/state"
)

// DefaultMaxAnswer bounds the bytes of one answer read when Config.MaxAnswer is not set: a
// configuration of 10,000 checks is about 4 MiB of JSON.
const DefaultMaxAnswer = 64 << 20

// Config configures a Client.
type Config struct {
	// Voters are the base URLs of voters' APIs, e.g. "http://127.0.0.1:7100", asked in order.
	// Blanks are skipped and a trailing slash is dropped.
	Voters []string
	// Token is the bearer token sent with every request; empty sends none (reads may be open,
	// or a client certificate stands in for a token).
	Token string
	// TLS is the TLS configuration of https voters: the CA that verifies them and the client
	// certificate to present, if any. Ignored when HTTP is set.
	TLS *tls.Config
	// HTTP makes the requests; nil makes a client of its own, with TLS. Redirects are not
	// followed, whatever its CheckRedirect: the API redirects no request it serves, and
	// following one would turn a write into a GET.
	HTTP *http.Client
	// MaxAnswer bounds the bytes of one answer read; default DefaultMaxAnswer.
	MaxAnswer int64
}

// Client calls the control API. It is safe for concurrent use.
type Client struct {
	voters     []string
	token      string
	http       *http.Client
	maxAnswer  int64
	consistent bool
}

// New returns a client of the voters of cfg.
func New(cfg Config) (*Client, error) {
	c := &Client{token: cfg.Token, maxAnswer: cfg.MaxAnswer}
	for _, v := range cfg.Voters {
		if v = strings.TrimRight(strings.TrimSpace(v), "/"); v != "" {
			c.voters = append(c.voters, v)
		}
	}
	if len(c.voters) == 0 {
		return nil, errors.New("control client: no voter URL")
	}
	for _, v := range c.voters {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("control client: voter %q: want a base URL such as http://127.0.0.1:7100", v)
		}
	}
	var hc http.Client
	switch {
	case cfg.HTTP != nil:
		hc = *cfg.HTTP
	case cfg.TLS != nil:
		hc.Transport = &http.Transport{TLSClientConfig: cfg.TLS.Clone()}
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &hc
	if c.maxAnswer <= 0 {
		c.maxAnswer = DefaultMaxAnswer
	}
	return c, nil
}

// Voters returns the voters' base URLs the client asks, in order.
func (c *Client) Voters() []string { return append([]string(nil), c.voters...) }

// Consistent returns a client whose reads are linearizable (?consistent): the leader
// confirms it is still the leader before it answers, and a follower forwards the read to it.
func (c *Client) Consistent() *Client {
	cc := *c
	cc.consistent = true
	return &cc
}

// request is one call of the API.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	ctype        string
	encoding     string // the body's Content-Encoding, if any
}

// send makes r of each voter in turn until one answers it, and returns the body of a 2xx
// answer. A voter that cannot answer (see the package doc) passes r to the next; the error of
// the last one is returned when none could.
func (c *Client) send(ctx context.Context, r request) ([]byte, error) {
	var last error
	for _, v := range c.voters {
		out, err := c.sendTo(ctx, v, r)
		if err == nil {
			return out, nil
		}
		last = err
		if !Unavailable(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// sendTo makes r of the voter at base.
func (c *Client) sendTo(ctx context.Context, base string, r request) ([]byte, error) {
	resp, err := c.open(ctx, base, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, c.maxAnswer+1))
	if err != nil {
		return nil, &noAnswerError{method: r.method, url: base + r.path, err: err}
	}
	if int64(len(out)) > c.maxAnswer {
		return nil, fmt.Errorf("control client: %s %s: the answer is larger than %d bytes", r.method, base+r.path, c.maxAnswer)
	}
	if resp.StatusCode/100 != 2 {
		return nil, newError(r.method, base+r.path, resp.StatusCode, out)
	}
	return out, nil
}

// open makes r of the voter at base and returns the answer, whatever its status, for the
// caller to read and close.
func (c *Client) open(ctx context.Context, base string, r request) (*http.Response, error) {
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("control client: %w", err)
	}
	if r.body != nil {
		ctype := r.ctype
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
		if r.encoding != "" {
			req.Header.Set("Content-Encoding", r.encoding)
		}
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &noAnswerError{method: r.method, url: base + r.path, err: err}
	}
	return resp, nil
}

// write makes a write and decodes its answer.
func (c *Client) write(ctx context.Context, method, path string, body any) (state.WriteResult, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return state.WriteResult{}, fmt.Errorf("control client: %s %s: %w", method, path, err)
		}
	}
	return c.writeRaw(ctx, request{method: method, path: path, body: data})
}

// writeRaw makes a write whose body is encoded already.
func (c *Client) writeRaw(ctx context.Context, r request) (state.WriteResult, error) {
	out, err := c.send(ctx, r)
	if err != nil {
		return state.WriteResult{}, err
	}
	var res state.WriteResult
	if err := json.Unmarshal(out, &res); err != nil {
		return state.WriteResult{}, fmt.Errorf("control client: %s %s: the answer is not a write result: %w", r.method, r.path, err)
	}
	return res, nil
}

// read makes a read and decodes the data of its answer into out.
func (c *Client) read(ctx context.Context, path string, query url.Values, out any) (state.ReadMeta, error) {
	if c.consistent {
		if query == nil {
			query = url.Values{}
		}
		query.Set("consistent", "")
	}
	b, err := c.send(ctx, request{method: http.MethodGet, path: path, query: query})
	if err != nil {
		return state.ReadMeta{}, err
	}
	var env struct {
		state.ReadMeta
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return state.ReadMeta{}, fmt.Errorf("control client: GET %s: %w", path, err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return state.ReadMeta{}, fmt.Errorf("control client: GET %s: %w", path, err)
	}
	return env.ReadMeta, nil
}

// get makes a read whose answer is not wrapped in the form of reads (GET /v1/cluster).
func (c *Client) get(ctx context.Context, path string, out any) error {
	b, err := c.send(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("control client: GET %s: %w", path, err)
	}
	return nil
}

// seg escapes one segment of a path.
func seg(s string) string { return url.PathEscape(s) }
