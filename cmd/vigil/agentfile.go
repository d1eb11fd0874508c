package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
)

// maxAgentFileBytes bounds the agent configuration file read: a page of settings is a few
// kilobytes.
const maxAgentFileBytes = 1 << 20

// fieldKind says how a field's YAML value becomes its flag's text.
type fieldKind int

const (
	// kindValue is one value, given to the flag as written: a string, number, boolean or
	// duration, as the flag's type wants.
	kindValue fieldKind = iota
	// kindPath is a file or directory; a relative one is taken from the file's directory.
	kindPath
	// kindList is a list of values, or one string of them separated by commas.
	kindList
	// kindIndexMap maps whole numbers to values (index: host:port), or is the flag's
	// "index=value,..." string.
	kindIndexMap
)

// agentField is one field of the agent configuration file: its name there, the flag of
// `vigil agent` it sets, how its value is read, and, where the flag's own parsing happens
// later, a check that reports a bad value with the field's path.
type agentField struct {
	name, flag string
	kind       fieldKind
	check      func(string) error
}

// agentFileFields is the one table of the agent configuration file's fields and the flags
// they set: every flag of `vigil agent` but -config has exactly one row (a test holds it to
// agentFlags.register), and docs/agent-config.md is generated from it.
func agentFileFields() []agentField {
	return []agentField{
		{name: "roles", flag: "roles", kind: kindList, check: checkRoles},
		{name: "id", flag: "id"},
		{name: "region", flag: "region"},
		{name: "data_dir", flag: "data-dir", kind: kindPath},
		{name: "log_level", flag: "log-level", check: checkLogLevel},
		{name: "memory_limit", flag: "memory-limit"},

		{name: "raft_addr", flag: "raft-addr"},
		{name: "raft_advertise", flag: "raft-advertise"},
		{name: "raft_log_store", flag: "raft-log-store", check: checkLogStore},
		{name: "api_addr", flag: "api-addr"},
		{name: "api_url", flag: "api-url"},
		{name: "raft_secret_file", flag: "raft-secret-file", kind: kindPath},
		{name: "insecure_raft_plaintext", flag: "insecure-raft-plaintext"},
		{name: "bootstrap", flag: "bootstrap"},
		{name: "bootstrap_id", flag: "bootstrap-id"},
		{name: "bootstrap_check_wait", flag: "bootstrap-check-wait"},
		{name: "control", flag: "control", kind: kindList},
		{name: "token_file", flag: "token-file", kind: kindPath},
		{name: "read_token_file", flag: "read-token-file", kind: kindPath},
		{name: "open_reads", flag: "open-reads"},
		{name: "notify_interval", flag: "notify-interval"},
		{name: "notify_locations", flag: "notify-locations", kind: kindList},

		{name: "join", flag: "join", kind: kindList},
		{name: "gossip_bind", flag: "gossip-bind"},
		{name: "gossip_advertise", flag: "gossip-advertise"},
		{name: "gossip_key_file", flag: "gossip-key-file", kind: kindPath},
		{name: "insecure_gossip", flag: "insecure-gossip"},
		{name: "gossip_max_streams", flag: "gossip-max-streams"},
		{name: "gossip_max_streams_per_source", flag: "gossip-max-streams-per-source"},
		{name: "gossip_max_stream_bytes", flag: "gossip-max-stream-bytes"},
		{name: "gossip_max_buffered_bytes", flag: "gossip-max-buffered-bytes"},
		{name: "gossip_stream_timeout", flag: "gossip-stream-timeout"},

		{name: "dns", flag: "dns"},
		{name: "ns", flag: "ns", kind: kindIndexMap},
		{name: "ns_budget", flag: "ns-budget", check: atLeast(-1, "a positive rate, or -1 for unlimited")},
		{name: "rrl", flag: "rrl", check: atLeast(0, "a rate >= 0 (0: off)")},
		{name: "rrl_slip", flag: "rrl-slip", check: atLeast(-1, "a slip >= 1, or -1 to drop every limited query")},
		{name: "dns_tcp_max_conns", flag: "dns-tcp-max-conns"},
		{name: "dns_tcp_max_conns_per_client", flag: "dns-tcp-max-conns-per-client"},
		{name: "dns_tcp_idle_timeout", flag: "dns-tcp-idle-timeout"},
		{name: "dns_tcp_lifetime", flag: "dns-tcp-lifetime"},
		{name: "dns_answer_cache", flag: "dns-answer-cache"},
		{name: "dns_udp_sockets", flag: "dns-udp-sockets", check: atLeast(0, "a count, or 0 for one per core")},
		{name: "dnssec_secret_file", flag: "dnssec-secret-file", kind: kindPath},
		{name: "tsig_keys_file", flag: "tsig-keys-file", kind: kindPath},
		{name: "insecure_dnssec_secret_from_gossip_key", flag: "insecure-dnssec-secret-from-gossip-key"},
		{name: "dnssec_sign_budget", flag: "dnssec-sign-budget"},

		{name: "http", flag: "http"},
		{name: "http_advertise", flag: "http-advertise"},
		{name: "http_header_timeout", flag: "http-header-timeout"},
		{name: "http_body_timeout", flag: "http-body-timeout"},
		{name: "http_idle_timeout", flag: "http-idle-timeout"},
		{name: "http_max_conns", flag: "http-max-conns"},
		{name: "http_max_conns_per_source", flag: "http-max-conns-per-source"},

		{name: "tls_cert", flag: "tls-cert", kind: kindPath},
		{name: "tls_key", flag: "tls-key", kind: kindPath},
		{name: "tls_ca", flag: "tls-ca", kind: kindPath},
		{name: "tls_require_client_cert", flag: "tls-require-client-cert"},
		{name: "tls_recheck", flag: "tls-recheck"},

		{name: "allow_loopback_probes", flag: "allow-loopback-probes"},
		{name: "probe_allow", flag: "probe-allow", kind: kindList, check: checkPrefixes},
		{name: "probe_ca", flag: "probe-ca", kind: kindPath},

		{name: "verify_interval", flag: "verify-interval"},
		{name: "verify_http_port", flag: "verify-http-port"},
		{name: "verify_dns_port", flag: "verify-dns-port"},
	}
}

// loadAgentFile sets the flags of fs from the agent configuration file at path, except those
// given on the command line (set), which override the file. Every problem of the file is
// reported at once, each with its field's path. It returns what the file set, for naming its
// fields in the errors that come later (agentFileOrigin).
func loadAgentFile(fs *flag.FlagSet, path string, set map[string]bool) (agentFileOrigin, error) {
	origin := agentFileOrigin{file: path, cmdline: set}
	f, err := os.Open(path)
	if err != nil {
		return origin, fmt.Errorf("-config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAgentFileBytes+1))
	if err != nil {
		return origin, fmt.Errorf("-config: %w", err)
	}
	if len(data) > maxAgentFileBytes {
		return origin, fmt.Errorf("-config %s: larger than %d bytes; an agent's settings fit in a few kilobytes", path, maxAgentFileBytes)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return origin, fmt.Errorf("-config: %w", err)
	}
	values, errs := parseAgentFile(data, fs, filepath.Dir(abs))
	if len(errs) > 0 {
		return origin, fmt.Errorf("-config %s: %d problem(s), each at its field:\n%w", path, len(errs), errs)
	}
	for _, v := range values {
		if set[v.flag] {
			continue
		}
		if err := fs.Set(v.flag, v.text); err != nil {
			return origin, fmt.Errorf("-config %s: %s: %w", path, v.path, err)
		}
		origin.set = append(origin.set, v)
	}
	return origin, nil
}

// agentFileOrigin is what the agent configuration file set: the settings the command line
// did not override. The agent's checks after the file's (a key file that cannot be opened,
// TLS files that do not go together) name flags; explain names the file's fields instead
// where the value came from the file.
type agentFileOrigin struct {
	file    string          // as given to -config; "" without a file
	cmdline map[string]bool // flags given on the command line
	set     []agentSetting  // fields the file set, in its order
}

// flagMention is a flag's name in an error message: "-gossip-key-file" after the start, a
// space, a quote, a parenthesis or a slash.
var flagMention = regexp.MustCompile(`(^|[\s("/])-([a-z][a-z0-9-]*[a-z0-9])`)

// explain rewrites msg, an error of the agent's configuration, for a reader of the file when
// it is about a value the file set: the file's name first, then the fields instead of the
// flags it names (but those given on the command line), or, where it names no flag, the
// field whose path it names: "agent.yaml: gossip_key_file: node: keyring: open ...". Any
// other message is returned as it is.
func (o agentFileOrigin) explain(msg string) string {
	if o.file == "" || len(o.set) == 0 {
		return msg
	}
	field := map[string]string{}
	for _, af := range agentFileFields() {
		field[af.flag] = af.name
	}
	fromFile := map[string]bool{}
	for _, s := range o.set {
		fromFile[s.flag] = true
	}
	named := false
	out := flagMention.ReplaceAllStringFunc(msg, func(m string) string {
		sub := flagMention.FindStringSubmatch(m)
		name, ok := field[sub[2]]
		if !ok || o.cmdline[sub[2]] {
			return m
		}
		named = named || fromFile[sub[2]]
		return sub[1] + name
	})
	if named {
		return o.file + ": " + out
	}
	for _, s := range o.set {
		if agentFieldKind(s.flag) == kindPath && s.text != "" && mentionsPath(msg, s.text) {
			return o.file + ": " + s.path + ": " + msg
		}
	}
	return msg
}

// agentFieldKind returns the kind of the field that sets flag name.
func agentFieldKind(name string) fieldKind {
	for _, af := range agentFileFields() {
		if af.flag == name {
			return af.kind
		}
	}
	return kindValue
}

// mentionsPath reports whether msg names the file path p as a whole: not as the start of a
// longer path (a data directory in the path of a file in it).
func mentionsPath(msg, p string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(msg) || strings.ContainsRune(": \"'),;\n", rune(msg[end])) {
			return true
		}
		i = end
	}
}

// agentSetting is one field of the file turned into its flag's text.
type agentSetting struct{ path, flag, text string }

// parseAgentFile reads the agent configuration file data against the flags of fs: each field
// checked and turned into its flag's text, relative paths taken from dir. It returns the
// settings in the file's order, or every problem found.
func parseAgentFile(data []byte, fs *flag.FlagSet, dir string) ([]agentSetting, config.Errors) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // a file of comments only: every flag keeps its default
		}
		return nil, config.Errors{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, config.Errors{{Message: "more than one YAML document; put every field in one mapping"}}
	}
	doc := root.Content[0]
	if doc.Kind == yaml.ScalarNode && doc.ShortTag() == "!!null" {
		return nil, nil
	}
	if doc.Kind != yaml.MappingNode {
		return nil, config.Errors{{Message: "the file must be a mapping of fields (roles, id, region, data_dir, ...), got " + nodeKind(doc)}}
	}
	fields := map[string]agentField{}
	names := make([]string, 0, len(agentFileFields()))
	for _, af := range agentFileFields() {
		fields[af.name] = af
		names = append(names, af.name)
	}
	var (
		errs config.Errors
		out  []agentSetting
		seen = map[string]int{}
	)
	add := func(path, format string, args ...any) {
		errs = append(errs, config.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i], doc.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			add("", "want field names as keys, got %s as a key", nodeKind(key))
			continue
		}
		af, ok := fields[key.Value]
		if !ok {
			if snake := strings.ReplaceAll(strings.TrimLeft(key.Value, "-"), "-", "_"); snake != key.Value && fields[snake].name != "" {
				add(key.Value, "unknown field; did you mean %s? (a field is its flag's name with _ for -)", snake)
			} else if near := config.Suggest(key.Value, names); near != "" {
				add(key.Value, "unknown field; did you mean %s?", near)
			} else {
				add(key.Value, "unknown field")
			}
			continue
		}
		if line, dup := seen[key.Value]; dup {
			add(key.Value, "set twice (first on line %d)", line)
			continue
		}
		seen[key.Value] = key.Line
		if val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null" {
			continue // null leaves the flag at its default
		}
		text, problems := fieldText(af, val, fs.Lookup(af.flag), dir)
		for _, p := range problems {
			errs = append(errs, config.FieldError{Path: fieldPath(af.name, p.Path), Message: p.Message})
		}
		if len(problems) == 0 {
			out = append(out, agentSetting{path: af.name, flag: af.flag, text: text})
		}
	}
	return out, errs
}

// fieldText turns the YAML value n of field af into the text of its flag fl, or says what
// is wrong with it (paths relative to the field).
func fieldText(af agentField, n *yaml.Node, fl *flag.Flag, dir string) (string, config.Errors) {
	var errs config.Errors
	var text string
	switch af.kind {
	case kindList:
		text = listText(n, &errs)
	case kindIndexMap:
		text = indexMapText(n, &errs)
	default:
		if n.Kind != yaml.ScalarNode {
			return "", config.Errors{{Message: "want a single value, got " + nodeKind(n)}}
		}
		text = n.Value
		if msg := typeProblem(fl, n); msg != "" {
			return "", config.Errors{{Message: msg}}
		}
		if af.kind == kindPath && text != "" && !filepath.IsAbs(text) {
			text = filepath.Join(dir, text)
		}
	}
	if len(errs) == 0 && af.check != nil {
		if err := af.check(text); err != nil {
			errs = append(errs, config.FieldError{Message: err.Error()})
		}
	}
	return text, errs
}

// listText joins a list of single values, or returns a single value as it is.
func listText(n *yaml.Node, errs *config.Errors) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for i, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				*errs = append(*errs, config.FieldError{Path: "[" + strconv.Itoa(i) + "]", Message: "want a single value, got " + nodeKind(c)})
				continue
			}
			if strings.Contains(c.Value, ",") {
				*errs = append(*errs, config.FieldError{Path: "[" + strconv.Itoa(i) + "]", Message: "a list item holds no comma, got " + strconv.Quote(c.Value) + "; make each value an item of its own"})
				continue
			}
			items = append(items, c.Value)
		}
		return strings.Join(items, ",")
	}
	*errs = append(*errs, config.FieldError{Message: "want a list, got " + nodeKind(n)})
	return ""
}

// indexMapText turns a mapping of whole numbers to values into "index=value,...", or returns
// a single value as it is.
func indexMapText(n *yaml.Node, errs *config.Errors) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.MappingNode:
		items := make([]string, 0, len(n.Content)/2)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if _, err := strconv.Atoi(k.Value); k.Kind != yaml.ScalarNode || err != nil {
				*errs = append(*errs, config.FieldError{Path: k.Value, Message: "want a whole number as the key (the name server's index), got " + nodeKind(k)})
				continue
			}
			if seen[k.Value] {
				*errs = append(*errs, config.FieldError{Path: k.Value, Message: "set twice"})
				continue
			}
			seen[k.Value] = true
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				*errs = append(*errs, config.FieldError{Path: k.Value, Message: "want host:port, got " + nodeKind(v)})
				continue
			}
			items = append(items, k.Value+"="+v.Value)
		}
		return strings.Join(items, ",")
	}
	*errs = append(*errs, config.FieldError{Message: "want a mapping of index: host:port, got " + nodeKind(n)})
	return ""
}

// typeProblem says what is wrong with scalar n as a value of flag fl's type; "" when nothing.
func typeProblem(fl *flag.Flag, n *yaml.Node) string {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case bool:
		if n.ShortTag() != "!!bool" || (n.Value != "true" && n.Value != "false") {
			return "want true or false, got " + strconv.Quote(n.Value)
		}
	case int:
		if _, err := strconv.Atoi(n.Value); err != nil || n.ShortTag() != "!!int" {
			return "want a whole number, got " + strconv.Quote(n.Value)
		}
	case time.Duration:
		if _, err := time.ParseDuration(n.Value); err != nil {
			return "want a duration such as 500ms, 5s or 1m30s, got " + strconv.Quote(n.Value)
		}
	}
	return ""
}

// nodeKind names a YAML node for an error message.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}

// fieldPath returns the path of sub within field.
func fieldPath(field, sub string) string {
	switch {
	case sub == "":
		return field
	case strings.HasPrefix(sub, "["):
		return field + sub
	}
	return field + "." + sub
}

func checkRoles(s string) error {
	_, err := agent.ParseRoles(s)
	return err
}

func checkLogLevel(s string) error {
	var level slog.Level
	return level.UnmarshalText([]byte(s))
}

func checkLogStore(s string) error {
	if s != control.LogStoreBolt && s != control.LogStoreWAL {
		return fmt.Errorf("want %q or %q, got %q", control.LogStoreBolt, control.LogStoreWAL, s)
	}
	return nil
}

func checkPrefixes(s string) error {
	for _, p := range splitList(s) {
		if _, err := netip.ParsePrefix(p); err != nil {
			return err
		}
	}
	return nil
}

// atLeast returns a check that a whole number is min or more; want says what is wanted.
func atLeast(low int, want string) func(string) error {
	return func(s string) error {
		if v, err := strconv.Atoi(s); err == nil && v < low {
			return fmt.Errorf("want %s, got %d", want, v)
		}
		return nil
	}
}
