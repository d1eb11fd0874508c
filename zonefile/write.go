package zonefile

import (
	"bytes"
	"io"
	"strconv"

	"github.com/vigil-dns/vigil/config"
	yaml "go.yaml.in/yaml/v3"
)

// Write writes doc, as Import makes it, as a YAML configuration document: its regions, and
// each zone with the fields it sets (no defaults restated), a record per line. comment, when
// not empty, heads the document as a YAML comment.
func Write(w io.Writer, doc *config.Document, comment string) error {
	root := mapping()
	root.HeadComment = comment
	regions := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, r := range doc.Regions {
		regions.Content = append(regions.Content, str(r))
	}
	zones := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range doc.Zones {
		zones.Content = append(zones.Content, zoneNode(&doc.Zones[i]))
	}
	add(root, "regions", regions)
	add(root, "zones", zones)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// zoneNode writes one zone.
func zoneNode(z *config.Zone) *yaml.Node {
	n := mapping()
	add(n, "name", str(z.Name))
	add(n, "ttl", num(uint64(z.TTL)))
	soa := mapping()
	if z.SOA.MName != "" {
		add(soa, "mname", str(z.SOA.MName))
	}
	if z.SOA.RName != "" {
		add(soa, "rname", str(z.SOA.RName))
	}
	for _, f := range []struct {
		name string
		v    uint32
	}{{"refresh", z.SOA.Refresh}, {"retry", z.SOA.Retry}, {"expire", z.SOA.Expire}, {"minimum", z.SOA.Minimum}, {"ttl", z.SOA.TTL}} {
		add(soa, f.name, num(uint64(f.v)))
	}
	add(n, "soa", soa)
	sets := &yaml.Node{Kind: yaml.SequenceNode}
	for _, rs := range z.RecordSets {
		s := mapping()
		add(s, "name", str(rs.Name))
		add(s, "type", str(string(rs.Type)))
		if rs.TTL != nil {
			add(s, "ttl", num(uint64(*rs.TTL)))
		}
		recs := &yaml.Node{Kind: yaml.SequenceNode}
		for _, r := range rs.Records {
			rec := mapping()
			rec.Style = yaml.FlowStyle
			add(rec, "value", str(r.Value))
			recs.Content = append(recs.Content, rec)
		}
		add(s, "records", recs)
		sets.Content = append(sets.Content, s)
	}
	add(n, "record_sets", sets)
	return n
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func add(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, str(key), v) }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func num(v uint64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(v, 10)}
}
