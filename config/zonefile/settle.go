package zonefile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// setPath reads the record set, and the record when there is one, that a validation problem
// is about.
var setPath = regexp.MustCompile(`^zones\[0\]\.record_sets\[(\d+)\](?:\.records\[(\d+)\])?`)

// settle validates doc, whose one zone holds b's sets in order, as `vigil validate` does, and
// leaves out what validation refuses, each record listed with the problem: a record when the
// problem is a record's, else its whole set; an SOA field takes its default. It repeats until
// the document is valid, since leaving out a set can change what the rules say of others (a
// delegation, and the glue below it). The error is for problems of the document itself,
// which no record caused.
func (b *builder) settle(doc *config.Document) error {
	for {
		err := doc.Validate()
		if err == nil {
			return nil
		}
		var es config.Errors
		if !errors.As(err, &es) {
			return fmt.Errorf("zonefile: %w", err)
		}
		z := &doc.Zones[0]
		dropSet := map[int]string{}
		dropRec := map[[2]int]string{}
		reset := false
		for _, e := range es {
			if m := setPath.FindStringSubmatch(e.Path); m != nil {
				j, _ := strconv.Atoi(m[1])
				if j >= len(b.sets) {
					return fmt.Errorf("zonefile: %s", e.Error())
				}
				msg := e.Message
				if field := strings.TrimPrefix(e.Path[len(m[0]):], "."); field != "" {
					msg = field + ": " + msg
				}
				if m[2] == "" {
					if _, ok := dropSet[j]; !ok {
						dropSet[j] = msg
					}
					continue
				}
				k, _ := strconv.Atoi(m[2])
				if k < len(b.sets[j].recs) {
					dropRec[[2]int{j, k}] = msg
				}
				continue
			}
			if field, ok := strings.CutPrefix(e.Path, "zones[0].soa."); ok && b.soa != nil && b.resetSOA(z, field, e.Message) {
				reset = true
				continue
			}
			return fmt.Errorf("zonefile: the document is not valid: %s", e.Error())
		}
		for j := len(b.sets) - 1; j >= 0; j-- {
			s := b.sets[j]
			if msg, ok := dropSet[j]; ok {
				for _, r := range s.recs {
					b.omitted = append(b.omitted, Problem{File: r.file, Line: r.line,
						Message: fmt.Sprintf("%s %s left out: %s", s.owner, s.typ, msg)})
				}
				b.sets = slices.Delete(b.sets, j, j+1)
				z.RecordSets = slices.Delete(z.RecordSets, j, j+1)
				continue
			}
			for k := len(s.recs) - 1; k >= 0; k-- {
				msg, ok := dropRec[[2]int{j, k}]
				if !ok {
					continue
				}
				r := s.recs[k]
				b.omitted = append(b.omitted, Problem{File: r.file, Line: r.line,
					Message: fmt.Sprintf("%s %s %s left out: %s", s.owner, s.typ, r.value, msg)})
				s.recs = slices.Delete(s.recs, k, k+1)
				z.RecordSets[j].Records = slices.Delete(z.RecordSets[j].Records, k, k+1)
			}
			if len(s.recs) == 0 {
				b.sets = slices.Delete(b.sets, j, j+1)
				z.RecordSets = slices.Delete(z.RecordSets, j, j+1)
			}
		}
		if len(dropSet) == 0 && len(dropRec) == 0 && !reset {
			return fmt.Errorf("zonefile: the document is not valid: %w", es)
		}
	}
}

// resetSOA gives the SOA field the default, and lists the SOA record with the problem; false
// for a field it does not know.
func (b *builder) resetSOA(z *config.Zone, field, msg string) bool {
	d := config.DefaultSOA()
	var was, now any
	switch field {
	case "mname":
		was, now, z.SOA.MName = z.SOA.MName, "the zone's first name server", ""
	case "rname":
		was, now, z.SOA.RName = z.SOA.RName, "hostmaster."+b.apex, ""
	case "refresh":
		was, now, z.SOA.Refresh = z.SOA.Refresh, d.Refresh, d.Refresh
	case "retry":
		was, now, z.SOA.Retry = z.SOA.Retry, d.Retry, d.Retry
	case "expire":
		was, now, z.SOA.Expire = z.SOA.Expire, d.Expire, d.Expire
	case "minimum":
		was, now, z.SOA.Minimum = z.SOA.Minimum, d.Minimum, d.Minimum
	case "ttl":
		was, now, z.SOA.TTL = z.SOA.TTL, d.TTL, d.TTL
	default:
		return false
	}
	b.omitted = append(b.omitted, Problem{File: b.soaAt.file, Line: b.soaAt.line,
		Message: fmt.Sprintf("SOA %s %v changed to %v: %s", field, was, now, msg)})
	return true
}
