package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// timing is the raft timing of the cluster's voters: short, so that a control plane forms and
// elects within a second on loopback.
func timing() control.Timing {
	return control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
		LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
}

// formBound bounds how long the voters take to form and take the document on an idle
// machine; the wait scales it by the slowdown measured meanwhile (internal/calibrate), since
// forming is elections and fsyncs that a busy machine delays.
const formBound = 30 * time.Second

// voterID names the i-th voter (from 0).
func voterID(i int) string { return fmt.Sprintf("voter-%d", i+1) }

// startVoters starts the voters of the options (the first bootstraps the control plane, the
// others join it through its API) and writes the document through the API once every voter
// is a member. A voter keeps its raft and API addresses across a restart, as a restarted
// process would.
func (c *Cluster) startVoters() error {
	if c.o.Voters == 0 {
		return nil
	}
	var apis []string
	for i := range c.o.Voters {
		cfg, err := c.voterConfig(i, apis)
		if err != nil {
			return err
		}
		m := &Member{c: c, cfg: cfg, freshReg: cfg.Registerer == nil}
		if err := c.run(m); err != nil {
			return err
		}
		c.mu.Lock()
		c.voters = append(c.voters, m)
		c.mu.Unlock()
		apis = append(apis, cfg.Control.APIURL)
	}
	c.apis = apis
	body, err := json.Marshal(c.o.Document)
	if err != nil {
		return fmt.Errorf("cluster: document: %w", err)
	}
	m := calibrate.Start()
	defer m.Stop()
	for {
		err := c.formed(apis[0], len(apis))
		if err == nil {
			err = c.putDocument(apis[0], body)
		}
		if err == nil {
			return nil
		}
		if !m.Within(formBound) {
			return fmt.Errorf("cluster: the control plane of %d voters did not form and take the document within %s of an idle machine (%v): %w", len(apis), formBound, m.Reading(), err)
		}
		select {
		case <-c.ctx.Done():
			return fmt.Errorf("cluster: %w", c.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// voterConfig is the configuration of voter i, which joins the voters of apis (none: it
// bootstraps).
func (c *Cluster) voterConfig(i int, apis []string) (agent.Config, error) {
	raftAddr, err := freeAddr()
	if err != nil {
		return agent.Config{}, err
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return agent.Config{}, err
	}
	id := voterID(i)
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = id, agent.RoleControl, filepath.Join(c.o.DataDir, id), "off"
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.APIURL = raftAddr, apiAddr, "http://"+apiAddr
	cfg.Control.WriteTokens = []string{c.o.Token}
	if i == 0 {
		cfg.Control.Bootstrap = true
	} else {
		cfg.Control.Join = slices.Clone(apis)
	}
	cfg.Control.Timing, cfg.Control.RaftLogLevel = timing(), slog.LevelWarn
	cfg.Logger = c.log.With("node", id)
	if c.o.Voter != nil {
		c.o.Voter(&cfg)
	}
	if cc := &cfg.Control; cfg.TLS == nil && !cc.InsecureRaftPlaintext && cc.RaftSecretFile == "" && cc.RaftSecret == nil {
		cc.RaftSecret = c.raftSecret
	}
	return cfg, nil
}

// freeAddr returns a loopback TCP address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cluster: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// client returns a client of the control API of the one voter at api, with the cluster's
// write token: its calls ask that voter and no other.
func (c *Cluster) client(api string) (*client.Client, error) {
	return client.New(client.Config{Voters: []string{api}, Token: c.o.Token})
}

// putDocument writes the document through the control API of the voter at api, as `vigil
// apply` does, within 10s.
func (c *Cluster) putDocument(api string, body []byte) error {
	cl, err := c.client(api)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	_, err = cl.PutDocument(ctx, body, client.ContentJSON)
	return err
}

// formed returns nil when the voter at api knows a leader and count voters.
func (c *Cluster) formed(api string, count int) error {
	cv, err := c.controlView(api)
	if err != nil {
		return err
	}
	if cv.Leader == "" || len(cv.Servers) < count {
		return fmt.Errorf("%d of %d voters, leader %q", len(cv.Servers), count, cv.Leader)
	}
	return nil
}

// controlView reads the control plane as the voter at api sees it, within 3s.
func (c *Cluster) controlView(api string) (state.ClusterView, error) {
	cl, err := c.client(api)
	if err != nil {
		return state.ClusterView{}, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
	defer cancel()
	return cl.Cluster(ctx)
}

// ControlAPIs returns the API URLs of the control plane the nodes follow, its voters running
// or not.
func (c *Cluster) ControlAPIs() []string { return slices.Clone(c.apis) }

// Voters returns the cluster's voters, running or not.
func (c *Cluster) Voters() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.voters)
}

// StopControl stops every running voter, for good (until Start).
func (c *Cluster) StopControl() error {
	var ids []string
	for _, v := range c.Voters() {
		if !v.Down() {
			ids = append(ids, v.cfg.ID)
		}
	}
	if len(ids) == 0 {
		return errors.New("this network has no control plane running")
	}
	for _, id := range ids {
		if err := c.Kill(id); err != nil {
			return err
		}
	}
	return nil
}

// KillLeader stops the control plane's leader, as a running voter sees it, and returns its
// ID. It waits (at most 15s) for a leader to be known.
func (c *Cluster) KillLeader() (string, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		var apis []string
		for _, v := range c.Voters() {
			if !v.Down() {
				apis = append(apis, v.cfg.Control.APIURL)
			}
		}
		var last error = errors.New("no voter running")
		for _, api := range apis {
			cv, err := c.controlView(api)
			if err == nil && cv.Leader != "" {
				return cv.Leader, c.Kill(cv.Leader)
			}
			if err == nil {
				err = fmt.Errorf("%s knows no leader", cv.ID)
			}
			last = err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no leader known within 15s: %w", last)
		}
		select {
		case <-c.ctx.Done():
			return "", fmt.Errorf("cluster: %w", c.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
