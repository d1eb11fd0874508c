package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
)

// runLoad generates load for measurements: writes on the control plane's API, or a
// synthetic configuration document of any size.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("load", args, stdout, stderr); stop {
		return code
	}
	switch args[0] {
	case "writes":
		return runLoadWrites(ctx, args[1:], stdout, stderr)
	case "document":
		return runLoadDocument(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "vigil load: unknown load %q (writes or document)\n", args[0])
	return 2
}

func runLoadWrites(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load writes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs) // -server: client i writes to server i mod n
	clients := fs.Int("clients", 1, "concurrent clients, each waiting for its write's answer before the next")
	duration := fs.Duration("duration", 10*time.Second, "how long to write")
	writes := fs.Int("writes", 0, "stop after this many writes in all (0: no limit)")
	kind := fs.String("kind", "check", "what to write: check (PUT /v1/checks/{id}) or record_set (PUT of an A record set in -zone)")
	zone := fs.String("zone", "", "zone of record-set writes (it must exist)")
	prefix := fs.String("prefix", "load", "start of the names written")
	spread := fs.Int("spread", 1000, "distinct items each client writes in turn")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	cf.resolve(fs)
	token, err := cf.token()
	if err != nil {
		return usageErr(stderr, "load writes", err)
	}
	voters, err := cf.voters()
	if err != nil {
		return usageErr(stderr, "load writes", err)
	}
	hc, err := cf.httpClient()
	if err != nil {
		return usageErr(stderr, "load writes", err)
	}
	if t, ok := hc.Transport.(*http.Transport); ok {
		// As the load's own client: a connection for each client, kept.
		t.MaxIdleConnsPerHost, t.MaxConnsPerHost = *clients, *clients
		hc.Timeout = 30 * time.Second
	} else {
		hc = nil // plain HTTP: the load's own client
	}
	res, err := client.RunWriteLoad(ctx, client.WriteLoad{
		Servers: voters, Token: token, Client: hc, Clients: *clients, Duration: *duration,
		Writes: *writes, Kind: *kind, Zone: *zone, Prefix: *prefix, Spread: *spread,
	})
	if err != nil {
		return cf.fail(stderr, "load writes", err)
	}
	fmt.Fprintf(stdout, "clients=%d kind=%s: %s\n", *clients, *kind, res)
	if res.Errors > 0 {
		return cf.fail(stderr, "load writes", fmt.Errorf("first error: %w", res.FirstError))
	}
	return 0
}

func runLoadDocument(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load document", flag.ContinueOnError)
	fs.SetOutput(stderr)
	checks := fs.Int("checks", 1000, "checks, each with a multivalue A record set it decides")
	regions := fs.String("regions", "us-east,eu-west,sa-east", "comma-separated regions")
	protocol := fs.String("protocol", "tcp", "tcp or http")
	target := fs.String("target", "127.0.0.1:80", "host:port every check probes")
	path := fs.String("path", "/", "request path of http checks")
	interval := fs.Duration("interval", 30*time.Second, "every check's interval")
	zoneSize := fs.Int("zone-size", 1000, "record sets per zone")
	domain := fs.String("domain", "scale.test.", "parent domain of the zones z<n>.<domain>")
	part := fs.Int("part", 0, "write a YAML stream of documents of at most this many checks, or whole zones of at most this many record sets (0: one document); a voter applies the stream as one configuration, decoding one part at a time")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	host, port, err := splitTarget(*target)
	if err != nil {
		fmt.Fprintf(stderr, "vigil load: -target: %v\n", err)
		return 2
	}
	s := config.Scale{Checks: *checks, Regions: strings.Split(*regions, ","), Protocol: config.Protocol(*protocol),
		Host: host, Port: port, Path: *path, Interval: *interval, ZoneSize: *zoneSize, Domain: *domain}
	if *part <= 0 {
		if err := s.WriteYAML(stdout); err != nil {
			fmt.Fprintf(stderr, "vigil load: %v\n", err)
			return 1
		}
		return 0
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.WriteYAML(pw)) }()
	defer pr.Close()
	if err := splitParts(pr, stdout, *part); err != nil {
		fmt.Fprintf(stderr, "vigil load: %v\n", err)
		return 1
	}
	return 0
}

// splitParts copies the document Scale.WriteYAML writes (one line a check, one line a record
// set, zones begun by "  - name:") as a YAML stream: after every n checks a new document of
// checks begins, and a zone that would take the record sets of its document past n begins a
// new document of zones. A zone is never split.
func splitParts(r io.Reader, w io.Writer, n int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bw := bufio.NewWriterSize(w, 64<<10)
	section, items, zoneSets := "", 0, 0
	var zone []string
	flushZone := func() {
		if zone == nil {
			return
		}
		if items > 0 && items+zoneSets > n {
			bw.WriteString("---\nzones:\n")
			items = 0
		}
		for _, l := range zone {
			bw.WriteString(l)
			bw.WriteByte('\n')
		}
		items += zoneSets
		zone, zoneSets = nil, 0
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "checks:" || line == "zones:":
			flushZone()
			section, items = line, 0
		case section == "checks:" && strings.HasPrefix(line, "  - "):
			if items == n {
				bw.WriteString("---\nchecks:\n")
				items = 0
			}
			items++
		case section == "zones:" && strings.HasPrefix(line, "  - "):
			flushZone()
			zone = []string{}
		case section == "zones:" && strings.HasPrefix(line, "      - "):
			zoneSets++
		}
		if zone != nil {
			zone = append(zone, line)
			continue
		}
		bw.WriteString(line)
		bw.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	flushZone()
	return bw.Flush()
}

// splitTarget splits host:port with a numeric port.
func splitTarget(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q: want host:port", s)
	}
	var port int
	if _, err := fmt.Sscan(s[i+1:], &port); err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", s)
	}
	return s[:i], port, nil
}
