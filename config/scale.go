package config

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"time"
)

// Scale describes a synthetic configuration for load tests and benchmarks: Checks probed
// checks of one target, each deciding one multivalue A record set of its own, spread over
// zones of ZoneSize record sets. `vigil load document` writes it; benchmarks build it.
type Scale struct {
	// Checks is the number of checks (and of record sets).
	Checks int
	// Regions are the document's regions; default us-east, eu-west, sa-east.
	Regions []string
	// Protocol is tcp or http; default tcp.
	Protocol Protocol
	// Host and Port are the target every check probes; default 127.0.0.1:80.
	Host string
	Port int
	// Path is the request path of http checks; default "/".
	Path string
	// Interval is every check's interval; default 30s. Timeout is min(4s, interval/2).
	Interval time.Duration
	// ZoneSize is the number of record sets per zone; default 1000.
	ZoneSize int
	// Domain is the parent of the zones z<n>.<Domain>; default "scale.test.".
	Domain string
}

func (s Scale) withDefaults() Scale {
	if len(s.Regions) == 0 {
		s.Regions = []string{"us-east", "eu-west", "sa-east"}
	}
	if s.Protocol == "" {
		s.Protocol = ProtocolTCP
	}
	if s.Host == "" {
		s.Host = "127.0.0.1"
	}
	if s.Port == 0 {
		s.Port = 80
	}
	if s.Path == "" {
		s.Path = "/"
	}
	if s.Interval <= 0 {
		s.Interval = 30 * time.Second
	}
	if s.ZoneSize <= 0 {
		s.ZoneSize = 1000
	}
	if s.Domain == "" {
		s.Domain = "scale.test."
	}
	s.Domain = absName(s.Domain)
	return s
}

// CheckID is the id of check i.
func (s Scale) CheckID(i int) string { return fmt.Sprintf("c%d", i) }

// Zone is the apex of the zone of record set i.
func (s Scale) Zone(i int) string {
	s = s.withDefaults()
	return fmt.Sprintf("z%d.%s", i/s.ZoneSize, s.Domain)
}

// Name is the owner name of record set i.
func (s Scale) Name(i int) string { return fmt.Sprintf("h%d.%s", i, s.Zone(i)) }

// Value is the address record set i answers.
func (s Scale) Value(i int) string { return fmt.Sprintf("192.0.%d.%d", (i/250)%256, 1+i%250) }

func (s Scale) timeout() time.Duration { return min(4*time.Second, s.Interval/2) }

// Document returns the configuration, normalised as Decode returns it.
func (s Scale) Document() *Document {
	s = s.withDefaults()
	d := DefaultDocument()
	d.Regions = slices.Clone(s.Regions)
	for i := range s.Checks {
		c := DefaultCheck()
		c.ID, c.Protocol, c.Target = s.CheckID(i), s.Protocol, Target{Host: s.Host, Port: s.Port}
		c.Interval, c.Timeout = Duration(s.Interval), Duration(s.timeout())
		if s.Protocol != ProtocolTCP {
			c.Path = s.Path
		}
		d.Checks = append(d.Checks, c)
	}
	for i := range s.Checks {
		if i%s.ZoneSize == 0 {
			z := DefaultZone()
			z.Name = s.Zone(i)
			d.Zones = append(d.Zones, z)
		}
		z := &d.Zones[len(d.Zones)-1]
		z.RecordSets = append(z.RecordSets, RecordSet{Name: s.Name(i), Type: TypeA, Policy: PolicyMultivalue,
			Records: []Record{{Value: s.Value(i), HealthCheck: s.CheckID(i)}}})
	}
	d.normalize()
	return &d
}

// WriteYAML writes the configuration as a compact YAML document, one line per check and
// per record set: what `vigil apply -f` sends.
func (s Scale) WriteYAML(w io.Writer) error {
	s = s.withDefaults()
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "regions: [")
	for i, r := range s.Regions {
		if i > 0 {
			bw.WriteString(", ")
		}
		bw.WriteString(r)
	}
	bw.WriteString("]\nchecks:\n")
	path := ""
	if s.Protocol != ProtocolTCP {
		path = fmt.Sprintf(", path: %q", s.Path)
	}
	for i := range s.Checks {
		fmt.Fprintf(bw, "  - {id: %s, protocol: %s, target: {host: %q, port: %d}%s, interval: %s, timeout: %s}\n",
			s.CheckID(i), s.Protocol, s.Host, s.Port, path, s.Interval, s.timeout())
	}
	bw.WriteString("zones:")
	if s.Checks == 0 {
		bw.WriteString(" []")
	}
	bw.WriteString("\n")
	for i := range s.Checks {
		if i%s.ZoneSize == 0 {
			fmt.Fprintf(bw, "  - name: %s\n    record_sets:\n", s.Zone(i))
		}
		fmt.Fprintf(bw, "      - {name: %s, type: A, policy: multivalue, records: [{value: %s, health_check: %s}]}\n",
			s.Name(i), s.Value(i), s.CheckID(i))
	}
	return bw.Flush()
}
