package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// validConfig is a checker+location that passes validation.
func validConfig() Config {
	c := DefaultConfig()
	c.ID, c.Region, c.DataDir = "n1", "us-east", "/var/lib/vigil"
	c.Gossip.Keys = [][]byte{testKey}
	c.Voters = []string{"http://127.0.0.1:7100"}
	return c
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	ctl := func(c *Config) {
		c.Roles, c.Control.WriteTokens = RoleControl, []string{"t"}
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no id", func(c *Config) { c.ID = "" }, "node: id is required"},
		{"long id", func(c *Config) { c.ID = strings.Repeat("x", 129) }, "node: id is longer than 128 bytes"},
		{"no region", func(c *Config) { c.Region = "" }, "node: region is required for the checker and location roles"},
		{"no roles", func(c *Config) { c.Roles = 0 }, "node: at least one role is required (control, checker, location)"},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "node: data directory is required (it keeps the disk copy of the configuration)"},
		{"eval too fast", func(c *Config) { c.EvalInterval = time.Millisecond }, "node: eval interval 1ms is outside 50ms to 10s"},
		{"bad http", func(c *Config) { c.HTTPAddr = "9090" }, `node: http address "9090" is not host:port`},
		{"bad http port", func(c *Config) { c.HTTPAddr = "127.0.0.1:http" }, `node: http address "127.0.0.1:http" has a bad port`},
		{"no key", func(c *Config) { c.Gossip.Keys = nil }, "node: gossip: an encryption key (keys or keyring file) is required, or the explicit insecure flag"},
		{"insecure with key", func(c *Config) { c.Gossip.Insecure = true }, "node: gossip: insecure and encryption keys are exclusive"},
		{"short key", func(c *Config) { c.Gossip.Keys = [][]byte{[]byte("short")} }, "node: gossip: key 0 is 5 bytes; keys are 16, 24 or 32 bytes"},
		{"bad bind", func(c *Config) { c.Gossip.Bind = "nowhere" }, `node: gossip bind address "nowhere" is not host:port`},
		{"bad join", func(c *Config) { c.Gossip.Join = []string{"10.0.0.1"} }, `node: gossip: join address "10.0.0.1" is not host:port`},
		{"no voters", func(c *Config) { c.Voters = nil }, "node: the data plane needs control voters to follow (or a static configuration)"},
		{"voter not a URL", func(c *Config) { c.Voters = []string{"127.0.0.1:7100"} }, `node: voter "127.0.0.1:7100" is not an http:// or https:// URL`},
		{"bad dns", func(c *Config) { c.DNSAddr = "localhost" }, `node: dns address "localhost" is not host:port`},
		{"negative ns", func(c *Config) { c.NameServers = map[int]string{-1: "127.0.0.2:53"} }, "node: name server -1: index is negative"},
		{"ns without location", func(c *Config) {
			c.Roles = RoleChecker
			c.NameServers = map[int]string{1: "127.0.0.2:53"}
		}, "node: name servers are set but the node has no location role"},
		{"negative concurrency", func(c *Config) { c.Probe.Concurrency = -1 }, "node: probe concurrency -1 is negative"},
		{"dns tcp network takes all", func(c *Config) { c.DNSTCP.MaxConns = 8 }, "node: dns tcp: 8 connections per client network of 8 in all: one network (/24 IPv4, /56 IPv6) could take them all; lower -dns-tcp-max-conns-per-client below -dns-tcp-max-conns"},
		{"gossip network takes all", func(c *Config) { c.Gossip.Inbound.MaxStreams, c.Gossip.Inbound.MaxStreamsPerSource = 4, 4 }, "node: gossip: 4 inbound streams per source network of 4 in all: one network (/24 IPv4, /56 IPv6) could take them all; lower -gossip-max-streams-per-source below -gossip-max-streams"},
		{"http network takes all", func(c *Config) { c.HTTPLimits.MaxConns, c.HTTPLimits.MaxConnsPerSource = 64, 64 }, "node: http: httpguard: connections 64 in all and 64 per network (/24 IPv4, /56 IPv6): want at least 2 in all and 1 per network, and fewer per network than in all so that one network cannot take them all (-http-max-conns, -http-max-conns-per-source)"},
		{"control without token", func(c *Config) { ctl(c); c.Control.WriteTokens = nil }, "node: control: at least one write token is required: no token, no write"},
		{"bootstrap and join", func(c *Config) {
			ctl(c)
			c.Control.Bootstrap, c.Control.Join = true, []string{"http://127.0.0.1:7101"}
		}, "node: control: bootstrap and join are exclusive"},
		{"static and control", func(c *Config) { ctl(c); c.Static = &config.Document{} }, "node: a static configuration and the control role are exclusive"},
		{"bad raft addr", func(c *Config) { ctl(c); c.Control.RaftAddr = "raft" }, `node: control raft address "raft" is not host:port`},
		{"gatherer alone", func(c *Config) { c.Gatherer = newReg() }, "node: a gatherer without its registerer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	// Every problem is reported at once, one per line.
	var c Config
	err := c.Validate()
	if err == nil || len(strings.Split(err.Error(), "\n")) != 3 {
		t.Errorf("zero config: %v", err)
	}
	// Only the control role: no region, gossip or voters needed.
	c = Config{ID: "v1", DataDir: "/d"}
	ctl(&c)
	if err := c.Validate(); err != nil {
		t.Errorf("control-only config: %v", err)
	}
}

func TestParseRoles(t *testing.T) {
	r, err := ParseRoles(" control, checker,location ")
	if err != nil || r != RoleControl|RoleChecker|RoleLocation {
		t.Errorf("all roles: %v %v", r, err)
	}
	for in, want := range map[string]string{
		"":            "node: no role given (roles are control, checker and location)",
		"checker,dns": `node: unknown role "dns" (roles are control, checker and location)`,
		" , ":         "node: no role given (roles are control, checker and location)",
	} {
		if _, err := ParseRoles(in); err == nil || err.Error() != want {
			t.Errorf("ParseRoles(%q) = %v, want %s", in, err, want)
		}
	}
}

// New refuses a bad configuration before binding anything, and a keyring file that holds
// no valid key.
func TestNewRefusesBadInput(t *testing.T) {
	c := validConfig()
	c.ID = ""
	if _, err := New(c); err == nil || err.Error() != "node: id is required" {
		t.Errorf("New with no id: %v", err)
	}
	c = validConfig()
	c.Gossip.Keys, c.Gossip.KeyringFile = nil, t.TempDir()+"/missing"
	c.Gossip.Bind, c.DNSAddr, c.HTTPAddr, c.DataDir = "127.0.0.1:0", "127.0.0.1:0", "off", t.TempDir()
	if _, err := New(c); err == nil || !strings.HasPrefix(err.Error(), "node: keyring: open ") {
		t.Errorf("New with a missing keyring: %v", err)
	}
}
