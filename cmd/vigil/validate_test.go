package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runValidateCmd runs the binary's entry point in process and returns its exit code and output.
func runValidateCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateDemo(t *testing.T) {
	code, stdout, stderr := runValidateCmd(t, "validate", "-f", "../../examples/demo.yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := "../../examples/demo.yaml: valid: 3 regions, 4 checks, 1 zone, 5 record sets\n"
	if stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
}

// vigil validate takes every probe kind, and names the problems of grpc and dns checks.
func TestValidateProbeKinds(t *testing.T) {
	const file = "../../config/testdata/valid/probe-kinds.yaml"
	code, stdout, stderr := runValidateCmd(t, "validate", "-f", file)
	if want := file + ": valid: 3 regions, 8 checks, 0 zones, 0 record sets\n"; code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	doc := `regions: [us-east, eu-west, ap-south]
checks:
  - {id: api, protocol: grpc, target: {host: 192.0.2.1}, grpc: {tls: true}, tls_ca: not-pem}
  - {id: ns, protocol: dns, target: {host: 192.0.2.53}, dns: {name: example.com, type: SRV}}
`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runValidateCmd(t, "validate", "-f", bad)
	want := []string{
		bad + ": checks[0].target.port: required for grpc checks",
		bad + ": checks[0].tls_ca: holds no PEM certificate (want one or more -----BEGIN CERTIFICATE----- blocks)",
		bad + ": checks[1].dns.type: must be A, AAAA, CNAME, TXT, MX, NS or SOA, got \"SRV\"",
		bad + ": 3 problems",
	}
	if got := strings.TrimSuffix(stderr, "\n"); code != 1 || got != strings.Join(want, "\n") {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, got, strings.Join(want, "\n"))
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	doc := `regions: [us-east, eu-west, ap-south]
checks:
  - {id: web, protocol: http, target: {host: 192.0.2.1}, interval: 1s, timeout: 2s}
zones:
  - name: example.test
    record_sets:
      - {name: www, type: A, policy: weighted, records: [{value: 192.0.2.1, weight: 300, health_check: nope}]}
`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runValidateCmd(t, "validate", "-f", file)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	want := []string{
		file + ": checks[0].timeout: must be positive and shorter than interval (1s), got 2s",
		file + ": zones[0].record_sets[0].records[0].health_check: no check has id \"nope\"",
		file + ": zones[0].record_sets[0].records[0].weight: must be 0..255, got 300",
		file + ": 3 problems",
	}
	if got := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
	}
}

func TestValidateUsage(t *testing.T) {
	for _, args := range [][]string{{"validate", "demo.yaml"}, {"validate", "-x"}} {
		if code, _, stderr := runValidateCmd(t, args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a usage message", args, code, stderr)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	code, _, stderr := runValidateCmd(t, "validate", "-f", missing)
	if want := "vigil: open " + missing + ": no such file or directory\n"; code != 1 || stderr != want {
		t.Errorf("missing file: exit %d, stderr %q; want %q (the file named once)", code, stderr, want)
	}
}

// Without -f, vigil validate checks the demo built into the binary, from any directory, and
// vigil dev starts from the same document.
func TestValidateEmbeddedDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stdout, stderr := runValidateCmd(t, "validate")
	if want := "embedded examples/demo.yaml: valid: 3 regions, 4 checks, 1 zone, 5 record sets\n"; code != 0 || stdout != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	var errb bytes.Buffer
	doc, name, code := loadDocument("", &errb)
	if doc == nil || code != 0 || name != "embedded examples/demo.yaml" || len(doc.Checks) != 4 {
		t.Errorf("loadDocument(\"\"): %v, %q, exit %d, %s", doc != nil, name, code, errb.String())
	}
}

// vigil validate lists a misspelt field with the field meant, and every other problem with it.
func TestValidateMisspeltFieldHidesNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	doc := `regions: [us-east, eu-west, ap-south]
checks:
  - {id: web, protocol: http, target: {host: 192.0.2.1, port: 80}, timout: 1s, interval: 2s, timeout: 3s}
`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runValidateCmd(t, "validate", "-f", bad)
	want := []string{
		bad + ": checks[0].timout: unknown field; did you mean timeout?",
		bad + ": checks[0].timeout: must be positive and shorter than interval (2s), got 3s",
		bad + ": 2 problems",
	}
	if got := strings.TrimSuffix(stderr, "\n"); code != 1 || got != strings.Join(want, "\n") {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, got, strings.Join(want, "\n"))
	}
}

// vigil validate reads the YAML stream vigil load document -part writes, as one configuration
// (the same counts as the document written whole), and names the part of a problem in one.
func TestValidateLoadDocumentStream(t *testing.T) {
	dir := t.TempDir()
	counts := map[string]string{}
	for _, part := range []string{"0", "7"} {
		code, doc, stderr := runValidateCmd(t, "load", "document", "-checks", "40", "-zone-size", "6", "-part", part)
		if code != 0 || stderr != "" {
			t.Fatalf("load document -part %s: exit %d, stderr %q", part, code, stderr)
		}
		if parts := strings.Count(doc, "\n---\n"); (part == "0") != (parts == 0) {
			t.Fatalf("load document -part %s wrote %d parts", part, parts+1)
		}
		file := filepath.Join(dir, "part"+part+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runValidateCmd(t, "validate", "-f", file)
		if code != 0 || stderr != "" {
			t.Fatalf("validate the stream of -part %s: exit %d, stderr %q", part, code, stderr)
		}
		counts[part] = strings.TrimPrefix(stdout, file)
	}
	if counts["0"] != counts["7"] {
		t.Errorf("whole: %q, as a stream: %q", counts["0"], counts["7"])
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("regions: [a, b, c]\n---\nchecks: []\n---\nregions: [d]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runValidateCmd(t, "validate", "-f", bad)
	if want := bad + ": document 3 of the stream (line 4) sets regions"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
	}
}
