package dev

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// DemoKey is the gossip encryption key of the demo networks (base64 of 32 bytes). It is
// public: the demo's gossip is encrypted to show how, not to keep a secret.
const DemoKey = "dmlnaWwtZGVtby1nb3NzaXAta2V5LTMyLWJ5dGVzISE="

// DemoDNSSECSecret is the seal secret of signed zones' private keys in the demo networks
// (base64 of 32 bytes): the voter seals with it and the locations open with it; checkers do
// not get it. It is public: demo only.
const DemoDNSSECSecret = "dmlnaWwtZGVtby1kbnNzZWMtc2VhbC1zZWNyZXQtMzI="

// DemoToken is the control API's write token in `vigil dev`, which listens on loopback only.
const DemoToken = "vigil-dev"

// Location is where one region's DNS location listens.
type Location struct {
	// DNS is the address of its DNS listener, UDP and TCP.
	DNS string
	// HTTP is the address of its HTTP server: the status API and page, /metrics, /healthz,
	// /readyz.
	HTTP string
}

// Config configures a dev network. DefaultConfig gives the documented addresses.
type Config struct {
	// Document is the configuration applied through the control plane at start.
	Document *config.Document
	// Regions are the regions, in order; each gets checkers, a location and a target.
	Regions []string
	// CheckersPerRegion is the number of checkers in each region.
	CheckersPerRegion int
	// DataDir holds the control plane's raft data (control/) and each node's data directory
	// (named by the node's id), with its disk copy of the configuration.
	DataDir string
	// ControlAddr is the address of the control API (and its /metrics and /v1/dev/ faults).
	ControlAddr string
	// Locations maps each region to its location's addresses.
	Locations map[string]Location
	// Targets maps each region to the address its demo target listens on.
	Targets map[string]string
	// CheckerHTTP maps each region to the addresses of its checkers' HTTP servers (the
	// status API: `vigil status probes`), in order; a region missing, or a checker beyond
	// its list, serves none.
	CheckerHTTP map[string][]string
	// Evaluate is node.Config.EvalInterval: how often a checker looks whether its handoffs
	// are over. Default 250ms; 50ms to 10s. Locations re-decide verdicts as reports arrive;
	// checkers recompute their assignment on every change of membership or configuration.
	Evaluate time.Duration
	// VerifyInterval is how often each region's first checker asks every location about
	// one record set with health checks (answer verification); default 1s, negative none.
	VerifyInterval time.Duration
	// VerifySettle is how long every location must answer a verdict change accordingly
	// before its convergence is measured; default 5s.
	VerifySettle time.Duration
	// Seed seeds the simulated network's packet loss.
	Seed uint64
	// Logger receives the logs; default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the documented addresses of `vigil dev`: control API
// 127.0.0.1:7700; locations us-east, eu-west, sa-east with DNS on 127.0.0.1:5301, 5302,
// 5303 and HTTP on 127.0.0.1:7701, 7702, 7703; demo targets on 127.0.0.1:7811, 7812, 7813.
// Document and DataDir are left to the caller.
func DefaultConfig() Config {
	return Config{
		Regions:           []string{"us-east", "eu-west", "sa-east"},
		CheckersPerRegion: 3,
		ControlAddr:       "127.0.0.1:7700",
		Locations: map[string]Location{
			"us-east": {DNS: "127.0.0.1:5301", HTTP: "127.0.0.1:7701"},
			"eu-west": {DNS: "127.0.0.1:5302", HTTP: "127.0.0.1:7702"},
			"sa-east": {DNS: "127.0.0.1:5303", HTTP: "127.0.0.1:7703"},
		},
		Targets: map[string]string{
			"us-east": "127.0.0.1:7811",
			"eu-west": "127.0.0.1:7812",
			"sa-east": "127.0.0.1:7813",
		},
		Seed: 1,
	}
}

// DefaultCheckerHTTP returns the documented addresses of the checkers' status APIs in
// `vigil dev`: 127.0.0.1:7711-7713 (us-east), 7721-7723 (eu-west), 7731-7733 (sa-east).
// DefaultConfig leaves them out, so that networks started by tests and simulations take no
// fixed port.
func DefaultCheckerHTTP() map[string][]string {
	return map[string][]string{
		"us-east": {"127.0.0.1:7711", "127.0.0.1:7712", "127.0.0.1:7713"},
		"eu-west": {"127.0.0.1:7721", "127.0.0.1:7722", "127.0.0.1:7723"},
		"sa-east": {"127.0.0.1:7731", "127.0.0.1:7732", "127.0.0.1:7733"},
	}
}

// validate reports every problem of c, after filling in defaults.
func (c *Config) validate() error {
	if c.Evaluate <= 0 {
		c.Evaluate = 250 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.VerifyInterval == 0 {
		c.VerifyInterval = time.Second
	}
	var errs []error
	if c.Document == nil {
		errs = append(errs, errors.New("dev: no document"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("dev: no data directory"))
	}
	if len(c.Regions) == 0 {
		errs = append(errs, errors.New("dev: no regions"))
	}
	if c.CheckersPerRegion < 1 || c.CheckersPerRegion > 16 {
		errs = append(errs, fmt.Errorf("dev: %d checkers per region: want 1 to 16", c.CheckersPerRegion))
	}
	for _, r := range c.Regions {
		if _, ok := c.Locations[r]; !ok {
			errs = append(errs, fmt.Errorf("dev: region %s has no location addresses", r))
		}
		if _, ok := c.Targets[r]; !ok {
			errs = append(errs, fmt.Errorf("dev: region %s has no target address", r))
		}
	}
	return errors.Join(errs...)
}
