package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Client drives the faults of a dev network through its control API. The zero HTTP uses
// http.DefaultClient.
type Client struct {
	// BaseURL is the control API's base URL, e.g. "http://127.0.0.1:7700".
	BaseURL string
	// HTTP makes the requests; nil means http.DefaultClient.
	HTTP *http.Client
}

// SetTargetDown switches region's demo target down or up.
func (c Client) SetTargetDown(ctx context.Context, region string, down bool) ([]Fault, error) {
	state := "up"
	if down {
		state = "down"
	}
	return c.do(ctx, http.MethodPost, "/v1/dev/targets/"+region+"/"+state, nil)
}

// Cut cuts one region from all others, or the link between two regions.
func (c Client) Cut(ctx context.Context, regions ...string) ([]Fault, error) {
	return c.do(ctx, http.MethodPost, "/v1/dev/cut", CutRequest{Regions: regions})
}

// Heal restores every link.
func (c Client) Heal(ctx context.Context) ([]Fault, error) {
	return c.do(ctx, http.MethodPost, "/v1/dev/heal", nil)
}

// Faults lists the faults in force.
func (c Client) Faults(ctx context.Context) ([]Fault, error) {
	return c.do(ctx, http.MethodGet, "/v1/dev/faults", nil)
}

func (c Client) do(ctx context.Context, method, path string, body any) ([]Fault, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("dev: client: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("dev: client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.requestError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("dev: client: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("dev: client: %s: %s", resp.Status, e.Error)
		}
		return nil, fmt.Errorf("dev: client: %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	var fl FaultList
	if err := json.Unmarshal(data, &fl); err != nil {
		return nil, fmt.Errorf("dev: client: answer: %w", err)
	}
	return fl.Faults, nil
}

// requestError is the error of a request that got no answer: when nothing listens at the
// base URL, it says that no dev network runs there and how to start one.
func (c Client) requestError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("no vigil dev answers at %s: start it with make run (or vigil dev), or give its control API with -control: %w", c.BaseURL, err)
	}
	return fmt.Errorf("dev: client: %w", err)
}
