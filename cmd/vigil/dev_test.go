package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/dev"
)

// TestDevFaultCommands drives a dev network's faults through `vigil dev target|cut|heal|
// faults`, as a user does against `vigil dev`.
func TestDevFaultCommands(t *testing.T) {
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := dev.DefaultConfig()
	cfg.Document, cfg.DataDir, cfg.ControlAddr = doc, t.TempDir(), "127.0.0.1:0"
	for _, r := range cfg.Regions {
		cfg.Locations[r] = dev.Location{DNS: "127.0.0.1:0", HTTP: "127.0.0.1:0"}
		cfg.Targets[r] = "127.0.0.1:0"
	}
	checkerAddr := freePort(t)
	cfg.CheckerHTTP = map[string][]string{"us-east": {checkerAddr}}
	ctx, cancel := context.WithCancel(t.Context())
	n, err := dev.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = n.Wait()
	}()
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		args = append([]string{"dev", args[0], "-control", n.ControlURL()}, args[1:]...)
		cctx, ccancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer ccancel()
		code := run(cctx, args, &out, &errb)
		return code, out.String() + errb.String()
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"faults"}, 0, "no faults"},
		{[]string{"target", "us-east", "down"}, 0, "target us-east is down"},
		{[]string{"cut", "sa-east"}, 0, "link eu-west <-> sa-east is cut"},
		{[]string{"cut", "us-east", "eu-west"}, 0, "link us-east <-> eu-west is cut"},
		{[]string{"faults"}, 0, "link us-east <-> sa-east is cut"},
		{[]string{"heal"}, 0, "target us-east is down"},
		{[]string{"target", "us-east", "up"}, 0, "no faults"},
		{[]string{"target", "mars", "down"}, 1, `no target in region "mars"`},
		{[]string{"cut", "sa-east", "sa-east"}, 1, "two different regions"},
		{[]string{"target", "us-east", "sideways"}, 2, "usage:"},
		{[]string{"heal", "now"}, 2, "usage:"},
	}
	for _, s := range steps {
		code, out := cli(s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("vigil dev %s: exit %d, output %q; want exit %d and %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
	if code, out := cli("heal"); code != 0 || strings.Contains(out, "cut") {
		t.Errorf("after heal: exit %d, %q", code, out)
	}

	// A dev checker serves its status API: vigil status probes works against it, and against
	// a location it says where to ask, with "status" said once.
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"status", "--addr", checkerAddr, "probes"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "checker us-east-checker-1 (us-east)") {
		t.Errorf("vigil status probes on a dev checker: exit %d, %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"status", "--addr", n.HTTPAddr("us-east"), "probes"}, &out, &errb); code != 1 ||
		strings.Count(errb.String(), "status:") != 1 || !strings.Contains(errb.String(), "--addr 127.0.0.1:7711") {
		t.Errorf("vigil status probes on a location: exit %d, stderr %q; want status: once and a hint", code, errb.String())
	}
}

// TestDevCommandsWithNoDevRunning: the fault and notification commands, with nothing at
// their control URL, say that no vigil dev answers there and how to start one.
func TestDevCommandsWithNoDevRunning(t *testing.T) {
	url := "http://" + freePort(t)
	for _, verb := range []string{"faults", "notifications"} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"dev", verb, "-control", url}, &out, &errb)
		if want := "no vigil dev answers at " + url + ": start it with make run"; code != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("vigil dev %s: exit %d, stderr %q; want 1 and %q", verb, code, errb.String(), want)
		}
	}
}
