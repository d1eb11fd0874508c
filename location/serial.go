package location

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/miekg/dns"
)

// Serials of the zones a location transfers out follow what it would transfer: the serial
// rises with every change of the zone as this location answers it (a verdict, a write, an
// override, a signature), never goes back, also across restarts, and is the SOA serial the
// location answers in every response. Each new serial is max(previous+1, the Unix time), in
// serial number arithmetic (RFC 1982): a serial read by a person says when the zone last
// changed, and one kept on disk before a restart is always passed.

// serialsFile is the file in Config.Transfer.DataDir that holds the last serial of each zone.
const serialsFile = "transfer-serials.json"

// serialStore keeps the last serial of each zone, on disk when it has a path. It is used by
// the transfer loop alone. A zone no longer transferred keeps its entry, so that its serial
// does not go back if it is transferred again; the entries are bounded by the zones a
// location ever transfers.
type serialStore struct {
	path string
	last map[string]uint32
}

// loadSerials reads the serials kept in dir ("" keeps them in memory only); a missing file is
// an empty store.
func loadSerials(dir string) (*serialStore, error) {
	st := &serialStore{last: map[string]uint32{}}
	if dir == "" {
		return st, nil
	}
	st.path = filepath.Join(dir, serialsFile)
	data, err := os.ReadFile(st.path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the zone serials: %w", err)
	}
	if err := json.Unmarshal(data, &st.last); err != nil {
		return nil, fmt.Errorf("read the zone serials %s: %w (move the file away to start the serials from the clock)", st.path, err)
	}
	return st, nil
}

// next returns the next serial of zone apex at now and keeps it: max(last+1, now's Unix
// time), or now's Unix time for a zone never seen.
func (st *serialStore) next(apex string, now time.Time) (uint32, error) {
	n := uint32(now.Unix())
	if last, ok := st.last[apex]; ok && !serialBefore(last, n) {
		n = last + 1
	}
	if n == 0 {
		n = 1
	}
	st.last[apex] = n
	return n, st.save()
}

// save writes the serials to a new file and renames it over the old one, so that a crash
// leaves one whole version.
func (st *serialStore) save() error {
	if st.path == "" {
		return nil
	}
	data, err := json.Marshal(st.last)
	if err != nil {
		return err
	}
	tmp := st.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write the zone serials: %w", err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		return fmt.Errorf("write the zone serials: %w", err)
	}
	return nil
}

// serialBefore reports whether serial a comes before b in serial number arithmetic (RFC 1982
// §3.2).
func serialBefore(a, b uint32) bool { return a != b && b-a < 1<<31 }

// servedSOA is the SOA a zone answers while its serial follows the answers, and its negative
// form (the RFC 2308 TTL).
type servedSOA struct {
	soa, neg *dns.SOA
}

// newServedSOA returns z's SOA with serial.
func newServedSOA(z *zone, serial uint32) *servedSOA {
	soa := *z.soa
	soa.Serial = serial
	neg := soa
	neg.Hdr.Ttl = z.negTTL
	return &servedSOA{soa: &soa, neg: &neg}
}

// servedSOA returns the SOA record z answers now.
func (z *zone) servedSOA() *dns.SOA {
	if p := z.served.Load(); p != nil {
		return p.soa
	}
	return z.soa
}

// negSOA returns the SOA record of z's negative answers now.
func (z *zone) negSOA() *dns.SOA {
	if p := z.served.Load(); p != nil {
		return p.neg
	}
	return z.neg
}
