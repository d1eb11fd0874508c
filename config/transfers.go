package config

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"
)

// Transfers says how one zone is handed to secondary name servers: which Vigil location
// feeds them (by node id or by region), which networks may transfer the zone (AXFR and IXFR,
// over TCP, each with a TSIG key), and which secondaries are told of every change by NOTIFY.
// The keys' secrets are not in the configuration, so that no read of it can show them: the
// control plane holds them sealed (PUT /v1/tsig-keys/{name}, vigil tsig put), or a location
// holds them in a file (vigil agent -tsig-keys-file).
type Transfers struct {
	// Location is the id of the location node that serves the transfers and sends NOTIFY;
	// empty when Region says.
	Location string `yaml:"location" json:"location,omitempty"`
	// Region names the region whose locations serve the transfers; empty when Location says.
	Region string `yaml:"region" json:"region,omitempty"`
	// Allow lists the networks (CIDR prefixes, or single addresses) that may transfer the
	// zone, beside the secondaries' own addresses. A transfer needs both an allowed network
	// and a TSIG key of the zone's secondaries.
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	// Secondaries are the name servers that transfer the zone: NOTIFY goes to each on every
	// change, signed with its key.
	Secondaries []Secondary `yaml:"secondaries" json:"secondaries"`
}

// Secondary is one secondary name server of a zone.
type Secondary struct {
	// Address is where NOTIFY goes, "192.0.2.53" or "[2001:db8::53]:5353" (port 53 when
	// none is given). The address may also transfer the zone.
	Address string `yaml:"address" json:"address"`
	// Key names the TSIG key (a domain name, e.g. "vigil-xfr.") the secondary signs its
	// requests with and NOTIFY is signed with.
	Key string `yaml:"key" json:"key"`
}

// MaxSecondaries bounds the secondaries of one zone.
const MaxSecondaries = 16

// AddrPort returns the secondary's address with its port (53 when none is given).
func (s Secondary) AddrPort() (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s.Address); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("port 0: give the port the secondary listens on, or none for 53")
		}
		return ap, nil
	}
	a, err := netip.ParseAddr(strings.Trim(s.Address, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("want an IP address with an optional port, e.g. 192.0.2.53 or [2001:db8::53]:5353")
	}
	return netip.AddrPortFrom(a, 53), nil
}

// AllowPrefixes returns the networks that may transfer the zone: Allow's and each
// secondary's address. Entries that do not parse are left out (Validate reports them).
func (t *Transfers) AllowPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, a := range t.Allow {
		if p, err := parsePrefix(a); err == nil {
			out = append(out, p)
		}
	}
	for _, s := range t.Secondaries {
		if ap, err := s.AddrPort(); err == nil {
			a := ap.Addr().Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out
}

// Feeds reports whether the location node id in region serves the transfers.
func (t *Transfers) Feeds(id, region string) bool {
	if t == nil {
		return false
	}
	if t.Location != "" {
		return t.Location == id
	}
	return t.Region != "" && t.Region == region
}

// TSIGKeyName returns name as TSIG key names are compared: lower case, absolute.
func TSIGKeyName(name string) string { return absName(strings.ToLower(strings.TrimSpace(name))) }

// TSIGAlgorithm returns the canonical form of a TSIG algorithm's name: lower case, without
// the final dot, hmac-sha256 when empty.
func TSIGAlgorithm(alg string) string {
	alg = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(alg)), ".")
	if alg == "" {
		return "hmac-sha256"
	}
	return alg
}

// TSIGKeyProblem says why a TSIG key cannot be used, or returns "": a name that is not a
// domain name, an algorithm weaker than HMAC-SHA256 (hmac-sha1, hmac-md5) or unknown, a
// secret that is not base64 of at least 16 bytes. The same rules hold for a location's key
// file and for the keys the control plane stores; the message never holds the secret.
func TSIGKeyProblem(name, algorithm, secret string) string {
	canon := TSIGKeyName(name)
	switch alg := TSIGAlgorithm(algorithm); {
	case strings.TrimSpace(name) == "" || nameProblem(canon) != "":
		return fmt.Sprintf("key %q: not a domain name: %s", name, nameProblem(canon))
	case alg != "hmac-sha256" && alg != "hmac-sha384" && alg != "hmac-sha512":
		return fmt.Sprintf("key %s: algorithm %q: want hmac-sha256, hmac-sha384 or hmac-sha512", canon, algorithm)
	}
	if b, err := base64.StdEncoding.DecodeString(secret); err != nil || len(b) < 16 {
		return fmt.Sprintf("key %s: the secret must be base64 of at least 16 bytes (e.g. tsig-keygen's or keymgr -t's output)", canon)
	}
	return ""
}

// parsePrefix reads a CIDR prefix or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// validateTransfers checks the transfers of zone z at path p.
func (v *validator) validateTransfers(z *Zone, p string) {
	t := z.Transfers
	if t == nil {
		return
	}
	p = join(p, "transfers")
	switch {
	case t.Location == "" && t.Region == "":
		v.add(p, "name the location that feeds the secondaries: location (a node id) or region")
	case t.Location != "" && t.Region != "":
		v.add(p, "location and region both set: give one of them")
	case t.Region != "" && len(v.regions) > 0 && !v.regions[t.Region]:
		v.add(join(p, "region"), "unknown region %q: regions are %s", t.Region, strings.Join(v.doc.Regions, ", "))
	}
	for i, a := range t.Allow {
		if _, err := parsePrefix(a); err != nil {
			v.add(join(p, fmt.Sprintf("allow[%d]", i)), "%q is not a network: want a CIDR prefix or an address, e.g. 192.0.2.0/24", a)
		}
	}
	if len(t.Secondaries) == 0 {
		v.add(join(p, "secondaries"), "at least one secondary (address and key) is required")
	}
	if len(t.Secondaries) > MaxSecondaries {
		v.add(join(p, "secondaries"), "%d secondaries: at most %d", len(t.Secondaries), MaxSecondaries)
	}
	seen := map[string]int{}
	for i, s := range t.Secondaries {
		sp := join(p, fmt.Sprintf("secondaries[%d]", i))
		ap, err := s.AddrPort()
		switch {
		case s.Address == "":
			v.add(join(sp, "address"), "required: where NOTIFY goes, e.g. 192.0.2.53 or 192.0.2.53:5353")
		case err != nil:
			v.add(join(sp, "address"), "%q: %v", s.Address, err)
		default:
			if j, dup := seen[ap.String()]; dup {
				v.add(join(sp, "address"), "duplicate secondary %s (also secondaries[%d])", ap, j)
			}
			seen[ap.String()] = i
		}
		switch {
		case s.Key == "":
			v.add(join(sp, "key"), "required: the name of the TSIG key the secondary transfers with")
		case nameProblem(TSIGKeyName(s.Key)) != "":
			v.add(join(sp, "key"), "invalid TSIG key name %q: %s", s.Key, nameProblem(TSIGKeyName(s.Key)))
		}
	}
}
