package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	yaml "go.yaml.in/yaml/v3"
)

// commentedField is a field commented out in an example file, "#tls_cert: ...".
var commentedField = regexp.MustCompile(`(?m)^#([a-z_]+:)`)

// TestExampleAgentFiles reads every shipped agent file, examples/agents/ and the compose
// demo's deploy/compose/agents/, as `vigil agent -config` reads it: no problem, roles set,
// and each field an example comments out is a field too (uncommented, the file still reads).
func TestExampleAgentFiles(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../../examples/agents/*.yaml", "../../deploy/compose/agents/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, want := range []string{"voter.yaml", "checker-location.yaml", "all-in-one.yaml", "control-1.yaml", "checker-sa-east-2.yaml"} {
		if !slices.ContainsFunc(files, func(f string) bool { return filepath.Base(f) == want }) {
			t.Errorf("no agent file %s among %v", want, files)
		}
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range [][]byte{b, commentedField.ReplaceAll(b, []byte("$1"))} {
			settings, errs := parseAgentFile(text, agentFlagSet(&agentFlags{}), filepath.Dir(path))
			if len(errs) > 0 {
				t.Errorf("%s:\n%v", path, errs)
				continue
			}
			if !slices.ContainsFunc(settings, func(s agentSetting) bool { return s.flag == "roles" }) {
				t.Errorf("%s sets no roles", path)
			}
		}
	}
}

// TestComposeAgentFiles reads each `vigil agent` of docker-compose.yml as the container runs
// it: the flags of its command (VIGIL_NET at its default) over its file, from the read-only
// mount of deploy/compose at /etc/vigil. Each node reads the file named after it, whose id is
// its own; every file is read by one node; the files it names exist.
func TestComposeAgentFiles(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command any      `yaml:"command"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	mount, err := filepath.Abs("../../deploy/compose")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for name, svc := range compose.Services {
		cmd, _ := svc.Command.(string)
		args := strings.Fields(strings.ReplaceAll(cmd, "${VIGIL_NET:-10.231}", "10.231"))
		if len(args) == 0 || args[0] != "agent" {
			continue
		}
		if !slices.Contains(svc.Volumes, "./deploy/compose:/etc/vigil:ro") {
			t.Errorf("%s: deploy/compose is not mounted read-only at /etc/vigil: %v", name, svc.Volumes)
		}
		want := "/etc/vigil/agents/" + name + ".yaml"
		if len(args) < 3 || args[1] != "-config" || args[2] != want {
			t.Errorf("%s: command %q, want agent -config %s ...", name, cmd, want)
			continue
		}
		args[2] = filepath.Join(mount, "agents", name+".yaml")
		used[filepath.Base(args[2])] = true
		var f agentFlags
		fs := agentFlagSet(&f)
		if err := fs.Parse(args[1:]); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		if _, err := loadAgentFile(fs, f.configFile, set); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if f.id != name {
			t.Errorf("%s: its file says id %q", name, f.id)
		}
		for _, p := range []string{f.tlsCert, f.tlsKey, f.tlsCA, f.tokenFile, f.gossipKeyFile, f.dnssecSecretFile} {
			if p == "" {
				continue
			}
			host, ok := strings.CutPrefix(p, "/etc/vigil/")
			if !ok {
				t.Errorf("%s: %s is outside the mount /etc/vigil", name, p)
				continue
			}
			if _, err := os.Stat(filepath.Join(mount, host)); err != nil {
				t.Errorf("%s: names %s: %v", name, p, err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(mount, "agents", "*.yaml"))
	for _, path := range files {
		if !used[filepath.Base(path)] {
			t.Errorf("deploy/compose/agents/%s: no service of docker-compose.yml reads it", filepath.Base(path))
		}
	}
	if len(used) != 12 {
		t.Errorf("%d agents in docker-compose.yml read a file; the demo has 12 (3 voters, 3 locations, 6 checkers)", len(used))
	}
}

// TestDocsAgentFiles reads the agent files the documentation shows: every ```yaml block
// with a roles field reads without a problem, and a block that names its file in its first
// line ("# examples/agents/voter.yaml: ...") is that file, byte for byte.
func TestDocsAgentFiles(t *testing.T) {
	var docs []string
	err := filepath.WalkDir("../../docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fence := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$")
	named := regexp.MustCompile(`^# ((?:examples|deploy)/[a-z0-9/_.-]+\.yaml):`)
	roles := regexp.MustCompile(`(?m)^roles:`)
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllSubmatch(b, -1) {
			block := m[1]
			if !roles.Match(block) {
				continue // a configuration document, or another file
			}
			n++
			if _, errs := parseAgentFile(block, agentFlagSet(&agentFlags{}), "/etc/vigil"); len(errs) > 0 {
				t.Errorf("%s: an agent file that does not read:\n%s\n%v", doc, block, errs)
			}
			if f := named.FindSubmatch(block); f != nil {
				file, err := os.ReadFile(filepath.Join("../..", string(f[1])))
				if err != nil {
					t.Errorf("%s shows %s: %v", doc, f[1], err)
				} else if !bytes.Equal(file, block) {
					t.Errorf("%s shows %s otherwise than it is: copy the file into the block", doc, f[1])
				}
			}
		}
	}
	if n < 4 {
		t.Errorf("%d agent files in the docs; the operator's guide alone shows more", n)
	}
}

// TestExampleAgentAllInOne starts examples/agents/all-in-one.yaml, copied beside a token and
// a gossip key as its comment says, with the listen addresses given as flags (free ports
// instead of the file's): the node takes a document through its API, answers DNS from it
// and says it is ready on /readyz.
func TestExampleAgentAllInOne(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../examples/agents/all-in-one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for name, content := range map[string]string{"all-in-one.yaml": string(example), "token": agentToken + "\n", "gossip.key": key + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api, dnsAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	args := []string{"-config", filepath.Join(dir, "all-in-one.yaml"), "-raft-addr", freePort(t), "-api-addr", api,
		"-gossip-bind", freePort(t), "-dns", dnsAddr, "-http", httpAddr, "-log-level", "error"}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runAgent(ctx, args, &stdout, &stderr) }()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("agent exit %d: %s", code, stderr.String())
			}
			// The file's id, data directory (from the file's directory) and the flags' addresses.
			if want := "vigil agent: node node-1 (checker+location+control) in us-east: data " + filepath.Join(dir, "node-1"); !strings.HasPrefix(stdout.String(), want) {
				t.Errorf("banner %q, want it to start with %q", stdout.String(), want)
			}
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop within 20s")
		}
	}()
	doc := `{"regions": ["us-east", "eu-west", "sa-east"],
		"zones": [{"name": "example.vigil.test",
		"record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.9"}]}]}]}`
	waitUntil(t, 30*time.Second, "the voter to take the document", func() bool {
		code, _, err := request("PUT", "http://"+api+"/v1/document", doc)
		return err == nil && code == 200
	})
	waitUntil(t, 30*time.Second, "a DNS answer from the document", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("www.example.vigil.test.", dns.TypeA)
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, dnsAddr)
		return err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "192.0.2.9"
	})
	waitUntil(t, 30*time.Second, "/readyz to say ready", func() bool {
		code, _, err := request("GET", "http://"+httpAddr+"/readyz", "")
		return err == nil && code == http.StatusOK
	})
}
