package netlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

// httpClient returns a client whose every connection is dialled from inside the namespace
// of the region its address belongs to: the harness talks to a voter or a target from its
// own region, over loopback, so that no management traffic crosses a link (and no cut hides
// or delays it).
func (t *Topology) httpClient() *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return nil, fmt.Errorf("netlab: %s is not an address of the network", addr)
			}
			r := t.regionOf(ip)
			if r == nil {
				return nil, fmt.Errorf("netlab: %s is in no region", addr)
			}
			return r.NS.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// call sends method to url with the write token and body (JSON, nil for none); out, when
// not nil, receives the decoded answer. Any status but 200 is an error. The control API is
// called through its client (voterClient); this is for the status API and the targets.
func call(ctx context.Context, c *http.Client, token, method, url string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("netlab: %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("netlab: %s %s: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("netlab: %s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(data[:min(len(data), 300)]))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("netlab: %s %s: %w", method, url, err)
		}
	}
	return nil
}

// voterClient returns a client of the control API of the voter v alone, with the write
// token, over the run's HTTP client (dialled from v's region).
func (r *run) voterClient(v *Proc) (*client.Client, error) {
	c, err := client.New(client.Config{Voters: []string{v.Addrs["api"]}, Token: r.fleet.token, HTTP: r.client})
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	return c, nil
}

// cluster returns the cluster as the voter v sees it.
func (r *run) cluster(ctx context.Context, v *Proc) (state.ClusterView, error) {
	c, err := r.voterClient(v)
	if err != nil {
		return state.ClusterView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cv, err := c.Cluster(ctx)
	if err != nil {
		return cv, fmt.Errorf("netlab: %w", err)
	}
	return cv, nil
}

// putDocument applies doc through the voter v.
func (r *run) putDocument(ctx context.Context, v *Proc, doc *config.Document) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("netlab: document: %w", err)
	}
	c, err := r.voterClient(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.PutDocument(ctx, body, client.ContentJSON); err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	return nil
}

// setTargetDown switches region's demo target down or up, from inside its region.
func (r *run) setTargetDown(ctx context.Context, region string, down bool) error {
	p := r.fleet.find(region + "-target")
	if p == nil {
		return fmt.Errorf("netlab: no target in region %q", region)
	}
	path := "/up"
	if down {
		path = "/down"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return call(ctx, r.client, "", http.MethodPost, "http://"+p.Addrs["http"]+path, []byte("{}"), nil)
}
