package externaldns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// errNotFound is a 404 of the control API.
var errNotFound = errors.New("not found")

// client writes and reads through the control plane's HTTP API: any voter, which forwards
// writes to the leader; the next voter is asked when one does not answer.
type client struct {
	voters []string
	token  string
	http   *http.Client
}

// maxAnswer bounds an answer of the control API the provider reads.
const maxAnswer = 64 << 20

// do sends one request and decodes a 2xx answer's "data" (reads) into out, when not nil.
func (c *client) do(ctx context.Context, method, path string, body any, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var last error
	for _, v := range c.voters {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(v, "/")+path, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			last = fmt.Errorf("%s: %w", v, err)
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		switch {
		case err != nil:
			last = fmt.Errorf("%s: %w", v, err)
			continue
		case resp.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%s %s: %w", method, path, errNotFound)
		case resp.StatusCode >= 500:
			last = fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
			continue
		case resp.StatusCode/100 != 2:
			return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		if out == nil {
			return nil
		}
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		return json.Unmarshal(env.Data, out)
	}
	if last == nil {
		last = errors.New("no control voter configured")
	}
	return fmt.Errorf("externaldns: control API: %w", last)
}

func zonePath(zone string) string { return "/v1/zones/" + url.PathEscape(zone) }

func setPath(zone, owner, typ string) string {
	return zonePath(zone) + "/record_sets/" + url.PathEscape(owner) + "/" + url.PathEscape(typ)
}

// recordSets returns the record sets of zone.
func (c *client) recordSets(ctx context.Context, zone string) ([]config.RecordSet, error) {
	var sets []config.RecordSet
	err := c.do(ctx, http.MethodGet, zonePath(zone)+"/record_sets?consistent", nil, &sets)
	return sets, err
}

// check returns the check id.
func (c *client) check(ctx context.Context, id string) (config.Check, error) {
	var ch config.Check
	err := c.do(ctx, http.MethodGet, "/v1/checks/"+url.PathEscape(id), nil, &ch)
	return ch, err
}

// putCheck writes a check, sending only the fields the provider sets so that the control
// plane fills in its defaults for the others (a zero value would be taken as written).
func (c *client) putCheck(ctx context.Context, ch *config.Check) error {
	body := map[string]any{"id": ch.ID, "protocol": ch.Protocol,
		"target": map[string]any{"host": ch.Target.Host, "port": ch.Target.Port}}
	if ch.Path != "" {
		body["path"] = ch.Path
	}
	return c.do(ctx, http.MethodPut, "/v1/checks/"+url.PathEscape(ch.ID), body, nil)
}

// deleteCheck deletes a check; one already gone is not an error.
func (c *client) deleteCheck(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/v1/checks/"+url.PathEscape(id), nil, nil)
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}

func (c *client) putRecordSet(ctx context.Context, zone string, rs *config.RecordSet) error {
	return c.do(ctx, http.MethodPut, setPath(zone, rs.Name, string(rs.Type)), rs, nil)
}

// deleteRecordSet deletes a record set; one already gone is not an error.
func (c *client) deleteRecordSet(ctx context.Context, zone, owner, typ string) error {
	err := c.do(ctx, http.MethodDelete, setPath(zone, owner, typ), nil, nil)
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}
