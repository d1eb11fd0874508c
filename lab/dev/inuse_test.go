package dev

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestStartAddrInUse: an address of the network already taken fails the start with one
// message that names the address, what wanted it and the fix, without a chain of prefixes;
// and a second network on a running one's control address says a dev network runs there.
func TestStartAddrInUse(t *testing.T) {
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgOn := func(control, target string) Config {
		cfg := DefaultConfig()
		cfg.Document, cfg.DataDir, cfg.ControlAddr = doc, t.TempDir(), control
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		for _, r := range cfg.Regions {
			cfg.Locations[r] = Location{DNS: "127.0.0.1:0", HTTP: "127.0.0.1:0"}
			cfg.Targets[r] = "127.0.0.1:0"
		}
		if target != "" {
			cfg.Targets["sa-east"] = target
		}
		return cfg
	}

	// Something that is not a dev network holds the sa-east target's port.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = Start(t.Context(), cfgOn("127.0.0.1:0", held.Addr().String()))
	var inUse *AddrInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("start on a taken port: %v; want an *AddrInUseError", err)
	}
	msg := err.Error()
	for _, want := range []string{held.Addr().String() + " (the sa-east demo target) is in use", "is `make run` (vigil dev) already running? stop it", "ss -ltnup"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "dev:") || inUse.DevRunning {
		t.Errorf("error %q: want no prefixes, and no dev network found running", msg)
	}

	// A location's port, taken after the control plane started.
	cfg := cfgOn("127.0.0.1:0", "")
	cfg.Locations["us-east"] = Location{DNS: "127.0.0.1:0", HTTP: held.Addr().String()}
	_, err = Start(t.Context(), cfg)
	if want := held.Addr().String() + " (the us-east location's HTTP) is in use"; !errors.As(err, &inUse) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("start on a taken location port: %v; want %q", err, want)
	}

	// A dev network runs: a second one on its control address is told so.
	ctx, cancel := context.WithCancel(t.Context())
	first, err := Start(ctx, cfgOn("127.0.0.1:0", ""))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = first.Wait()
	}()
	control := strings.TrimPrefix(first.ControlURL(), "http://")
	_, err = Start(t.Context(), cfgOn(control, ""))
	if !errors.As(err, &inUse) || !inUse.DevRunning ||
		!strings.Contains(err.Error(), control+" (the control API) is in use: a vigil dev already runs here") {
		t.Errorf("second network on the control address: %v; want it to say a vigil dev already runs", err)
	}
}
