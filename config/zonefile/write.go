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
// not empty, heads the document as a YAML comment. The record sets are encoded a few hundred
// at a time, so that the cost stays in proportion to the zone: the YAML encoder's memory
// grows faster than the tree it is given (1.5 GB for a zone of 100,000 records in one tree).
func Write(w io.Writer, doc *config.Document, comment string) error {
	root := mapping()
	root.HeadComment = comment
	regions := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, r := range doc.Regions {
		regions.Content = append(regions.Content, str(r))
	}
	add(root, "regions", regions)
	var buf bytes.Buffer
	if err := encode(&buf, root, ""); err != nil {
		return err
	}
	if len(doc.Zones) == 0 {
		buf.WriteString("zones: []\n")
	} else {
		buf.WriteString("zones:\n")
	}
	for i := range doc.Zones {
		z := &doc.Zones[i]
		if err := encode(&buf, item(zoneNode(z)), "  "); err != nil {
			return err
		}
		if len(z.RecordSets) == 0 {
			buf.WriteString("    record_sets: []\n")
			continue
		}
		buf.WriteString("    record_sets:\n")
		for j := 0; j < len(z.RecordSets); j += setsPerEncode {
			batch := &yaml.Node{Kind: yaml.SequenceNode}
			for k := j; k < min(j+setsPerEncode, len(z.RecordSets)); k++ {
				batch.Content = append(batch.Content, setNode(&z.RecordSets[k]))
			}
			if err := encode(&buf, batch, "      "); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// setsPerEncode is how many record sets one call of the YAML encoder writes.
const setsPerEncode = 256

// encode writes n in YAML to buf, each line after indent.
func encode(buf *bytes.Buffer, n *yaml.Node, indent string) error {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	for _, l := range bytes.SplitAfter(b.Bytes(), []byte("\n")) {
		if len(l) > 0 {
			buf.WriteString(indent)
			buf.Write(l)
		}
	}
	return nil
}

// item returns a list of the one node n, as a list's item is written.
func item(n *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{n}}
}

// zoneNode writes one zone, without its record sets.
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
	return n
}

// setNode writes one record set, a record per line.
func setNode(rs *config.RecordSet) *yaml.Node {
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
	return s
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func add(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, str(key), v) }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func num(v uint64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(v, 10)}
}
