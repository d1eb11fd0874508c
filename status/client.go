package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxBody bounds a response the client reads by default: a status response is far smaller.
const maxBody = 32 << 20

// Client reads a node's status API.
type Client struct {
	// Base is the node's API URL, e.g. "http://127.0.0.1:7701".
	Base string
	// HTTP is the client used; nil is http.DefaultClient.
	HTTP *http.Client
	// MaxBytes bounds a response read; 0 is 32 MiB.
	MaxBytes int64
}

// NewClient returns a client of the node at addr: "host:port" or a URL.
func NewClient(addr string) (*Client, error) {
	if addr == "" {
		return nil, errors.New("status: no address")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("status: bad address %q", addr)
	}
	return &Client{Base: strings.TrimRight(u.String(), "/")}, nil
}

// Get decodes the JSON at path (e.g. "/v1/verification", served beside the status API) into
// out; an error response becomes an error with its message.
func (c *Client) Get(ctx context.Context, path string, out any) error { return c.get(ctx, path, out) }

// get decodes the JSON at path into out; an error response becomes an error with its message.
func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.Base, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer res.Body.Close()
	limit := c.MaxBytes
	if limit <= 0 {
		limit = maxBody
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, limit))
	if err != nil {
		return fmt.Errorf("status: reading %s: %w", path, err)
	}
	if res.StatusCode != http.StatusOK {
		var e ErrorBody
		_ = json.Unmarshal(body, &e)
		return &HTTPError{Path: path, Code: res.StatusCode, Message: strings.TrimPrefix(e.Error, "status: ")}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("status: decoding %s: %w", path, err)
	}
	return nil
}

// Verdicts returns the location's verdicts; state, when not empty, keeps only that state.
func (c *Client) Verdicts(ctx context.Context, state string) (VerdictList, error) {
	var v VerdictList
	path := "/v1/verdicts"
	if state != "" {
		path += "?state=" + url.QueryEscape(state)
	}
	return v, c.get(ctx, path, &v)
}

// Check returns one check's verdict with its evidence.
func (c *Client) Check(ctx context.Context, id string) (CheckEvidence, error) {
	var v CheckEvidence
	return v, c.get(ctx, "/v1/verdicts/"+url.PathEscape(id), &v)
}

// Checkers returns the checkers as the location hears them.
func (c *Client) Checkers(ctx context.Context) (CheckerList, error) {
	var v CheckerList
	return v, c.get(ctx, "/v1/checkers", &v)
}

// Answer returns what the location would answer now for name and type.
func (c *Client) Answer(ctx context.Context, name, rtype string) (Answer, error) {
	var v Answer
	q := url.Values{"name": {name}, "type": {rtype}}
	return v, c.get(ctx, "/v1/answer?"+q.Encode(), &v)
}

// Probes returns the checker's assigned checks and latest results.
func (c *Client) Probes(ctx context.Context) (ProbeList, error) {
	var v ProbeList
	return v, c.get(ctx, "/v1/probes", &v)
}

// Members returns the pool as the node sees it.
func (c *Client) Members(ctx context.Context) (MemberList, error) {
	var v MemberList
	return v, c.get(ctx, "/v1/members", &v)
}

// Node returns the node's identity, configuration and readiness.
func (c *Client) Node(ctx context.Context) (NodeInfo, error) {
	var v NodeInfo
	return v, c.get(ctx, "/v1/node", &v)
}

// Digest returns the location's digest (GET /v1/network/digest): its verdicts in brief and
// whom it hears, what the other locations' network views, the answer verifier and the
// notifier read of it. A transport failure is a *url.Error, an error response an *HTTPError.
func (c *Client) Digest(ctx context.Context) (Digest, error) {
	var v Digest
	return v, c.get(ctx, "/v1/network/digest", &v)
}

// Network returns one page of the network view: filter is "", "all", "disagree" or
// "unhealthy"; q searches check ids; cursor is the previous page's Next; limit 0 is the
// server's default.
func (c *Client) Network(ctx context.Context, filter, q, cursor string, limit int) (NetworkView, error) {
	var v NetworkView
	p := url.Values{}
	for k, s := range map[string]string{"filter": filter, "q": q, "cursor": cursor} {
		if s != "" {
			p.Set(k, s)
		}
	}
	if limit > 0 {
		p.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/network"
	if len(p) > 0 {
		path += "?" + p.Encode()
	}
	return v, c.get(ctx, path, &v)
}

// Answers returns the DNS view: what the location answers now for each record set that
// consults a health check, with its rule and whether last resort is in force; q keeps the sets
// whose name contains it, limit 0 is the server's default.
func (c *Client) Answers(ctx context.Context, q string, limit int) (AnswerList, error) {
	var v AnswerList
	p := url.Values{}
	if q != "" {
		p.Set("q", q)
	}
	if limit > 0 {
		p.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/answers"
	if len(p) > 0 {
		path += "?" + p.Encode()
	}
	return v, c.get(ctx, path, &v)
}

// History returns one check's verdict changes and availability at the location.
func (c *Client) History(ctx context.Context, id string) (CheckHistory, error) {
	var v CheckHistory
	return v, c.get(ctx, "/v1/history/"+url.PathEscape(id), &v)
}

// AnswerHistory returns the answer changes of the record sets of name (all when empty).
func (c *Client) AnswerHistory(ctx context.Context, name string) (AnswerHistory, error) {
	var v AnswerHistory
	path := "/v1/answer-history"
	if name != "" {
		path += "?name=" + url.QueryEscape(name)
	}
	return v, c.get(ctx, path, &v)
}

// HTTPError is an error response of a node: the path asked, the HTTP status and the node's
// message (without its "status: " prefix; empty when the body held none). Callers tell a role
// the node does not run (404) from a failure with errors.As.
type HTTPError struct {
	Path    string
	Code    int
	Message string
}

// Error says what the node answered.
func (e *HTTPError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("status: %s: %s (HTTP %d)", e.Path, e.Message, e.Code)
	}
	return fmt.Sprintf("status: %s: HTTP %d", e.Path, e.Code)
}
