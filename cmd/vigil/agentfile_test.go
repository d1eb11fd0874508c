package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var updateDocs = flag.Bool("update-agent-doc", false, "rewrite the generated part of docs/agent-config.md")

// agentFlagSet returns the flags of vigil agent, as runAgent registers them.
func agentFlagSet(f *agentFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	return fs
}

// TestAgentFileTable holds the table of the file's fields to the flags: every flag but
// -config has exactly one field, named after it with "_" for "-", and every field a flag.
func TestAgentFileTable(t *testing.T) {
	fs := agentFlagSet(&agentFlags{})
	byFlag := map[string]string{}
	names := map[string]bool{}
	for _, af := range agentFileFields() {
		if fs.Lookup(af.flag) == nil {
			t.Errorf("field %s sets -%s, which vigil agent does not have", af.name, af.flag)
		}
		if prev, dup := byFlag[af.flag]; dup {
			t.Errorf("-%s has two fields: %s and %s", af.flag, prev, af.name)
		}
		if names[af.name] {
			t.Errorf("field %s listed twice", af.name)
		}
		if want := strings.ReplaceAll(af.flag, "-", "_"); af.name != want {
			t.Errorf("field %s sets -%s: name it %s, the flag with _ for -", af.name, af.flag, want)
		}
		byFlag[af.flag], names[af.name] = af.name, true
	}
	n := 0
	fs.VisitAll(func(fl *flag.Flag) {
		n++
		if _, ok := byFlag[fl.Name]; !ok && fl.Name != "config" {
			t.Errorf("flag -%s has no field in agentFileFields", fl.Name)
		}
	})
	if n < 50 {
		t.Errorf("vigil agent has %d flags; the table expects more than 50", n)
	}
}

// TestAgentFileInvalid maps files to the exact problems reported, each with its path.
func TestAgentFileInvalid(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"unknown field, suggested", "roles: control\nregoin: us-east\n",
			"regoin: unknown field; did you mean region?"},
		{"a flag's name", "-data-dir: /srv/vigil\ngossip-key-file: k\n",
			"-data-dir: unknown field; did you mean data_dir? (a field is its flag's name with _ for -)\n" +
				"gossip-key-file: unknown field; did you mean gossip_key_file? (a field is its flag's name with _ for -)"},
		{"unknown field, nothing near", "roles: control\nfavourite_colour: blue\n",
			"favourite_colour: unknown field"},
		{"set twice", "id: a\nid: b\n",
			"id: set twice (first on line 1)"},
		{"every problem at once", "bootstrap: yes\nns_budget: lots\nnotify_interval: 5\njoin: [a, {b: c}]\nroles: control,dns\n",
			"bootstrap: want true or false, got \"yes\"\n" +
				"ns_budget: want a whole number, got \"lots\"\n" +
				"notify_interval: want a duration such as 500ms, 5s or 1m30s, got \"5\"\n" +
				"join[1]: want a single value, got a mapping\n" +
				"roles: node: unknown role \"dns\" (roles are control, checker and location)"},
		{"list item with a comma", "join: [\"a:1,b:2\"]\n",
			"join[0]: a list item holds no comma, got \"a:1,b:2\"; make each value an item of its own"},
		{"mapping where a value goes", "id: {a: b}\n",
			"id: want a single value, got a mapping"},
		{"ns keys", "ns: {one: 127.0.0.1:53, 2: [x]}\n",
			"ns.one: want a whole number as the key (the name server's index), got \"one\"\nns.2: want host:port, got a list"},
		{"ranges", "rrl: -1\nrrl_slip: -2\nns_budget: -5\n",
			"rrl: want a rate >= 0 (0: off), got -1\nrrl_slip: want a slip >= 1, or -1 to drop every limited query, got -2\nns_budget: want a positive rate, or -1 for unlimited, got -5"},
		{"log level, store and prefixes", "log_level: loud\nraft_log_store: sqlite\nprobe_allow: [10.0.0.0/8, 10.1/16]\n",
			"log_level: slog: level string \"loud\": unknown name\nraft_log_store: want \"boltdb\" or \"wal\", got \"sqlite\"\nprobe_allow: netip.ParsePrefix(\"10.1/16\"): ParseAddr(\"10.1\"): IPv4 address too short"},
		{"not a mapping", "- roles\n", "the file must be a mapping of fields (roles, id, region, data_dir, ...), got a list"},
		{"two documents", "id: a\n---\nid: b\n", "more than one YAML document; put every field in one mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := parseAgentFile([]byte(c.file), agentFlagSet(&agentFlags{}), "/etc/vigil")
			if got := errs.Error(); got != c.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// TestAgentFileSettings checks what a file sets: values of every kind, relative paths from the
// file's directory, flags on the command line over the file, and defaults for the rest.
func TestAgentFileSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	file := `# a checker and location
roles: [checker, location]
id: n1
region: us-east
data_dir: data
token_file: /etc/vigil/token
tls_ca: ../ca.pem
join: [10.0.0.1:7946, "https://10.0.0.2:7100"]
control: http://10.0.0.2:7100,http://10.0.0.3:7100
ns: {0: 127.0.0.1:5301, 1: "127.0.0.1:5302"}
rrl: 20
insecure_gossip: true
dns_tcp_idle_timeout: 3s
verify_interval: 1m
http: 127.0.0.1:7701
memory_limit: ~
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	var f agentFlags
	fs := agentFlagSet(&f)
	if err := fs.Parse([]string{"-id", "from-flag", "-config", path, "-rrl", "7"}); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if _, err := loadAgentFile(fs, f.configFile, set); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"roles", f.roles, "checker,location"},
		{"id (flag wins)", f.id, "from-flag"},
		{"region", f.region, "us-east"},
		{"data_dir (relative)", f.dataDir, filepath.Join(dir, "data")},
		{"token_file (absolute)", f.tokenFile, "/etc/vigil/token"},
		{"tls_ca (relative, upwards)", f.tlsCA, filepath.Join(filepath.Dir(dir), "ca.pem")},
		{"join", f.join, "10.0.0.1:7946,https://10.0.0.2:7100"},
		{"control", f.voters, "http://10.0.0.2:7100,http://10.0.0.3:7100"},
		{"ns", f.nameServers, "0=127.0.0.1:5301,1=127.0.0.1:5302"},
		{"rrl (flag wins)", fmt.Sprint(f.rrlRate), "7"},
		{"insecure_gossip", fmt.Sprint(f.insecureGossip), "true"},
		{"dns_tcp_idle_timeout", f.dnsTCP.IdleTimeout.String(), "3s"},
		{"verify_interval", f.verify.interval.String(), "1m0s"},
		{"http", f.httpAddr, "127.0.0.1:7701"},
		{"memory_limit (null: default)", f.memoryLimit, ""},
		{"raft_addr (absent: default)", f.raftAddr, "127.0.0.1:7000"},
		{"gossip_stream_timeout (absent: default)", f.gossipLimits.StreamReadTimeout.String(), (5 * time.Second).String()},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestAgentFileCommand runs vigil agent with a bad file: exit 2, every problem with its path.
func TestAgentFileCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte("roles: control\nbootstrp: true\nrrl: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut, _ := runCaptured(t.Context(), "agent", "-config", path)
	want := "vigil agent: -config " + path + ": 2 problem(s), each at its field:\nbootstrp: unknown field; did you mean bootstrap?\nrrl: want a whole number, got \"x\"\n"
	if code != 2 || errOut != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errOut, want)
	}
	code, _, errOut, _ = runCaptured(t.Context(), "agent", "-config", path+".missing")
	if code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

const (
	docBegin = "<!-- BEGIN generated by `go test ./cmd/vigil -run TestAgentConfigDoc -update-agent-doc`: edit the flags' help instead -->"
	docEnd   = "<!-- END generated -->"
)

// TestAgentConfigDoc holds docs/agent-config.md to the flags: its reference part is what
// agentConfigReference makes of them, so a field without its section, or a section of a
// field that does not exist, fails here.
func TestAgentConfigDoc(t *testing.T) {
	path := "../../docs/agent-config.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	before, rest, ok1 := strings.Cut(doc, docBegin+"\n")
	_, after, ok2 := strings.Cut(rest, docEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no generated part between %q and %q", path, docBegin, docEnd)
	}
	want := before + docBegin + "\n" + agentConfigReference() + docEnd + after
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Errorf("%s is not what the flags say; run go test ./cmd/vigil -run TestAgentConfigDoc -update-agent-doc", path)
	}
	// The sections name the fields and nothing else.
	sections := regexp.MustCompile("(?m)^### `([a-z0-9_]+)`$").FindAllStringSubmatch(doc, -1)
	fields := map[string]bool{}
	for _, af := range agentFileFields() {
		fields[af.name] = true
	}
	seen := map[string]bool{}
	for _, s := range sections {
		if !fields[s[1]] {
			t.Errorf("%s documents %s, which is no field", path, s[1])
		}
		seen[s[1]] = true
	}
	for name := range fields {
		if !seen[name] {
			t.Errorf("%s lacks a section for field %s", path, name)
		}
	}
}

// agentConfigReference writes the field-by-field reference of the agent configuration file
// from the table and the flags' help, grouped as vigil agent -h groups the flags.
func agentConfigReference() string {
	var f agentFlags
	fs := agentFlagSet(&f)
	groups := agentFlagGroups()
	toField := map[string]string{}
	for _, af := range agentFileFields() {
		toField[af.flag] = af.name
	}
	var b strings.Builder
	for _, g := range groups.order {
		fmt.Fprintf(&b, "\n## %s\n", g)
		for _, af := range agentFileFields() {
			if groups.of[af.flag] != g {
				continue
			}
			fl := fs.Lookup(af.flag)
			usage := flagMention.ReplaceAllStringFunc(fl.Usage, func(m string) string {
				sub := flagMention.FindStringSubmatch(m)
				if name, ok := toField[sub[2]]; ok {
					return sub[1] + "`" + name + "`"
				}
				return m
			})
			usage = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(usage)
			def := "none"
			if fl.DefValue != "" {
				def = "`" + fl.DefValue + "`"
			}
			fmt.Fprintf(&b, "\n### `%s`\n\n%s; flag `-%s`; default %s.\n\n%s.\n", af.name, fieldType(af, fl), af.flag, def, usage)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// fieldType names the YAML type of a field for the reference.
func fieldType(af agentField, fl *flag.Flag) string {
	switch af.kind {
	case kindPath:
		return "Path (relative: from the file's directory)"
	case kindList:
		return "List of strings, or one comma-separated string"
	case kindIndexMap:
		return "Mapping of index to host:port, or one string index=host:port,..."
	}
	switch fl.Value.(flag.Getter).Get().(type) {
	case bool:
		return "Boolean"
	case int:
		return "Whole number"
	case time.Duration:
		return "Duration (e.g. 500ms, 5s, 1m30s)"
	}
	return "String"
}

// TestPackagedAgentFile reads the package's /etc/vigil/agent.yaml: as shipped, it sets the
// data directory to the unit's state directory and nothing else, without a problem.
func TestPackagedAgentFile(t *testing.T) {
	b, err := os.ReadFile("../../deploy/debian/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	settings, errs := parseAgentFile(b, agentFlagSet(&agentFlags{}), "/etc/vigil")
	if len(errs) > 0 {
		t.Fatalf("deploy/debian/agent.yaml:\n%v", errs)
	}
	if len(settings) != 1 || settings[0].flag != "data-dir" || settings[0].text != "/var/lib/vigil" {
		t.Errorf("settings %+v, want data_dir /var/lib/vigil alone", settings)
	}
	// Every commented example is a field: uncommented, the file still reads.
	uncommented := regexp.MustCompile(`(?m)^#([a-z_]+:)`).ReplaceAll(b, []byte("$1"))
	settings, errs = parseAgentFile(uncommented, agentFlagSet(&agentFlags{}), "/etc/vigil")
	if len(errs) > 0 {
		t.Fatalf("deploy/debian/agent.yaml with every example uncommented:\n%v", errs)
	}
	if len(settings) < 20 {
		t.Errorf("%d examples in the packaged file; want the fields of every role", len(settings))
	}
}

// TestAgentFileLaterErrors runs vigil agent with files whose values the agent refuses after
// the file's own checks (a key file that is not there, TLS files that do not go together): the
// error names the file and the field, and a flag given on the command line keeps its name.
func TestAgentFileLaterErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t0k3n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const base = "roles: [checker, location]\nregion: us-east\ndata_dir: data\ncontrol: [http://127.0.0.1:1]\ntoken_file: token\n"
	listen := []string{"-dns", "127.0.0.1:0", "-http", "127.0.0.1:0", "-gossip-bind", "127.0.0.1:0"}
	for _, c := range []struct {
		name, file string
		flags      []string
		code       int
		want       string // FILE for the file's path, DIR for its directory
	}{
		{"gossip key file", "gossip_key_file: missing.key\n", nil, 1,
			"vigil agent: FILE: gossip_key_file: node: keyring: open DIR/missing.key: no such file or directory\n"},
		{"token file", "insecure_gossip: true\nread_token_file: ../nowhere/read-token\n", nil, 2,
			"vigil agent: FILE: read_token_file: tokens: open " + filepath.Dir(dir) + "/nowhere/read-token: no such file or directory\n"},
		{"probe CA", "insecure_gossip: true\nprobe_ca: ca.pem\n", nil, 2,
			"vigil agent: FILE: probe_ca: open DIR/ca.pem: no such file or directory\n"},
		{"TLS files that go together", "insecure_gossip: true\ntls_cert: node.pem\n", nil, 2,
			"vigil agent: FILE: tls_cert and tls_key go together: give both (the certificate and its key) or neither\n"},
		{"memory limit", "insecure_gossip: true\nmemory_limit: lots\n", nil, 2,
			"vigil agent: FILE: memory_limit: \"lots\": want bytes with an optional B, KiB, MiB, GiB or TiB, e.g. 2GiB\n"},
		{"the flag overrides the file", "insecure_gossip: true\nprobe_ca: ca.pem\n", []string{"-probe-ca", "/nonexistent/ca.pem"}, 2,
			"vigil agent: -probe-ca: open /nonexistent/ca.pem: no such file or directory\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "agent.yaml")
			if err := os.WriteFile(path, []byte(base+c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append(append([]string{"agent", "-config", path}, listen...), c.flags...)
			code, _, errOut, _ := runCaptured(canceled(), args...)
			want := strings.NewReplacer("FILE", path, "DIR", dir).Replace(c.want)
			// The logger may write before the error; the error is the last line.
			lines := strings.SplitAfter(strings.TrimSuffix(errOut, "\n"), "\n")
			if last := lines[len(lines)-1] + "\n"; code != c.code || last != want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and, last:\n%s", code, errOut, c.code, want)
			}
		})
	}
}

// TestAgentFileExplain pins which messages explain rewrites: not one about a file inside a
// directory the file set, nor one that names no value of the file.
func TestAgentFileExplain(t *testing.T) {
	o := agentFileOrigin{file: "agent.yaml", cmdline: map[string]bool{"tls-key": true}, set: []agentSetting{
		{path: "data_dir", flag: "data-dir", text: "/var/lib/vigil"},
		{path: "tls_cert", flag: "tls-cert", text: "/etc/vigil/node.pem"},
	}}
	for _, c := range []struct{ msg, want string }{
		{"node: open /var/lib/vigil/control/raft.db: permission denied", "node: open /var/lib/vigil/control/raft.db: permission denied"},
		{"node: mkdir /var/lib/vigil: permission denied", "agent.yaml: data_dir: node: mkdir /var/lib/vigil: permission denied"},
		{"-tls-cert and -tls-key go together", "agent.yaml: tls_cert and -tls-key go together"},
		{"-probe-ca: open /x: no such file", "-probe-ca: open /x: no such file"},
		{"node: control: at least one write token is required", "node: control: at least one write token is required"},
	} {
		if got := o.explain(c.msg); got != c.want {
			t.Errorf("explain(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
	if got := (agentFileOrigin{}).explain("-tls-cert: x"); got != "-tls-cert: x" {
		t.Errorf("without a file: %q", got)
	}
}
