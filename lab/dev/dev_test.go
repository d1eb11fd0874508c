package dev

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/status"
)

// startTest starts a dev network of the demo configuration on free loopback ports, and
// stops it at the end of the test.
func startTest(t *testing.T) *Network { return startEdited(t, nil) }

// startEdited is startTest with edit applied to the configuration before the start.
func startEdited(t *testing.T, edit func(cfg *Config)) *Network {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Document = doc
	cfg.DataDir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.ControlAddr = "127.0.0.1:0"
	for _, r := range cfg.Regions {
		cfg.Locations[r] = Location{DNS: "127.0.0.1:0", HTTP: "127.0.0.1:0"}
		port := freePort(t)
		cfg.Targets[r] = "127.0.0.1:" + strconv.Itoa(port)
		for i := range doc.Checks {
			if doc.Checks[i].ID == "web-"+r {
				doc.Checks[i].Target.Port = port
			}
		}
	}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(t.Context())
	n, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := n.Wait(); err != nil {
			t.Errorf("dev network: %v", err)
		}
	})
	return n
}

// httpGet returns the status and body of a GET of url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// answers returns the sorted A records a location's DNS gives for name, over UDP.
func answers(addr, name string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	c := &dns.Client{Timeout: time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s: rcode %s", name, dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out, nil
}

// eventually polls cond every 200ms until it holds or within passes, and fails the test
// with the last reason otherwise. within is the bound on an idle machine: the wait scales it
// by the slowdown measured meanwhile (internal/calibrate), at most calibrate.MaxSlowdown.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	m := calibrate.Start()
	defer m.Stop()
	var why string
	for m.Within(within) {
		var ok bool
		if ok, why = cond(); ok {
			t.Logf("%s after %v", what, time.Since(start).Round(10*time.Millisecond))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v of an idle machine (%v): %s", what, within, m.Reading(), why)
}

// allAnswer reports whether every region's location answers name with want.
func allAnswer(n *Network, regions []string, name string, want ...string) func() (bool, string) {
	return func() (bool, string) {
		for _, r := range regions {
			got, err := answers(n.DNSAddr(r), name)
			if err != nil {
				return false, r + ": " + err.Error()
			}
			if !slices.Equal(got, want) {
				return false, fmt.Sprintf("%s answers %v, want %v", r, got, want)
			}
		}
		return true, ""
	}
}

// TestDevStory runs the demo's story: failover when a target goes down, a region cut off
// (its location keeps answering from what it hears; the others drop its target), and a heal.
func TestDevStory(t *testing.T) {
	n := startTest(t)
	regions := n.cfg.Regions
	const (
		usEast, euWest, saEast = "192.0.2.1", "198.51.100.1", "203.0.113.1"
	)
	eventually(t, 20*time.Second, "www answers us-east everywhere", allAnswer(n, regions, "www.demo.vigil.test", usEast))
	eventually(t, 20*time.Second, "every check healthy at every location", func() (bool, string) {
		for _, r := range regions {
			vs := n.Verdicts(r)
			if len(vs) != len(n.cfg.Document.Checks) {
				return false, fmt.Sprintf("%s: %d verdicts, want %d", r, len(vs), len(n.cfg.Document.Checks))
			}
			for id, v := range vs {
				if v.State.String() != "healthy" {
					return false, fmt.Sprintf("%s: %s is %s (%s)", r, id, v.State, v.Sentence)
				}
			}
		}
		return true, ""
	})

	// Each location's HTTP serves the status API and page: the same verdicts, by its node.
	for _, r := range regions {
		sc := status.Client{Base: "http://" + n.HTTPAddr(r)}
		vs, err := sc.Verdicts(t.Context(), "")
		if err != nil {
			t.Fatalf("%s: status API: %v", r, err)
		}
		if vs.Location != r+"-location" || len(vs.Checks) != len(n.cfg.Document.Checks) {
			t.Errorf("%s: status API answers location %q with %d checks", r, vs.Location, len(vs.Checks))
		}
	}
	if code, body := httpGet(t, "http://"+n.HTTPAddr("us-east")+"/"); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("status page: HTTP %d: %.200s", code, body)
	}

	c := Client{BaseURL: n.ControlURL()}
	faults, err := c.SetTargetDown(t.Context(), "us-east", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != 1 || faults[0].Kind != FaultTargetDown || faults[0].Regions[0] != "us-east" {
		t.Fatalf("faults after target down: %v", faults)
	}
	// Three probe intervals (1s) plus 2s.
	eventually(t, 5*time.Second, "www fails over to eu-west everywhere", allAnswer(n, regions, "www.demo.vigil.test", euWest))
	if _, err := c.SetTargetDown(t.Context(), "us-east", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "all answers every target again", allAnswer(n, regions, "all.demo.vigil.test", usEast, euWest, saEast))

	faults, err = c.Cut(t.Context(), "sa-east")
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != 2 {
		t.Fatalf("faults after cutting sa-east: %v, want its two links", faults)
	}
	eventually(t, 30*time.Second, "sa-east cut off", func() (bool, string) {
		if ok, why := allAnswer(n, []string{"us-east", "eu-west"}, "all.demo.vigil.test", usEast, euWest)(); !ok {
			return false, why
		}
		// The sa-east location hears only sa-east checkers, which reach only their own target.
		return allAnswer(n, []string{"sa-east"}, "all.demo.vigil.test", saEast)()
	})
	for _, r := range []string{"us-east", "eu-west"} {
		if v := n.Verdicts(r)["web-sa-east"]; v.State.String() != "unhealthy" {
			t.Errorf("%s's verdict of web-sa-east during the cut: %s (%s)", r, v.State, v.Sentence)
		}
	}
	if v := n.Verdicts("sa-east")["web-sa-east"]; v.State.String() != "healthy" || v.Counts.Fresh == 0 {
		t.Errorf("sa-east's verdict of web-sa-east during the cut: %s (%s)", v.State, v.Sentence)
	}

	if faults, err = c.Heal(t.Context()); err != nil || len(faults) != 0 {
		t.Fatalf("heal: faults %v, err %v", faults, err)
	}
	eventually(t, 40*time.Second, "all locations agree after the heal", allAnswer(n, regions, "all.demo.vigil.test", usEast, euWest, saEast))
}
