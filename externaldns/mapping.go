package externaldns

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
)

// The provider-specific properties the provider reads, as ExternalDNS names them from the
// annotations "external-dns.alpha.kubernetes.io/webhook-vigil-...".
const (
	PropHealthCheck = "webhook/vigil-health-check"
	PropHealthPort  = "webhook/vigil-health-port"
	PropHealthPath  = "webhook/vigil-health-path"
	PropPolicy      = "webhook/vigil-policy"
)

// supported are the record types a Vigil record set may have that ExternalDNS writes.
var supported = []string{"A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS", "CAA", "PTR"}

// health is what an endpoint's properties ask for: a check of each target, and a policy.
type health struct {
	protocol config.Protocol // empty: no checks
	port     int
	path     string
	policy   config.Policy
}

// healthOf reads an endpoint's properties: defaults filled, values checked. They apply to A
// and AAAA endpoints only: ExternalDNS copies a resource's properties onto its ownership TXT
// records too, which get none.
func healthOf(e *Endpoint) (health, error) {
	var h health
	h.policy = config.PolicySimple
	if e.RecordType != "A" && e.RecordType != "AAAA" {
		return h, nil
	}
	if v, ok := e.property(PropHealthCheck); ok && v != "" {
		h.protocol = config.Protocol(strings.ToLower(v))
		switch h.protocol {
		case config.ProtocolHTTP:
			h.port, h.path = 80, "/"
		case config.ProtocolHTTPS:
			h.port, h.path = 443, "/"
		case config.ProtocolTCP:
		default:
			return h, fmt.Errorf("%s: %q: want http, https or tcp", PropHealthCheck, v)
		}
		h.policy = config.PolicyMultivalue
	}
	if v, ok := e.property(PropHealthPort); ok && v != "" && h.protocol != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return h, fmt.Errorf("%s: %q: not a port", PropHealthPort, v)
		}
		h.port = p
	}
	if h.protocol == config.ProtocolTCP && h.port == 0 {
		return h, fmt.Errorf("%s is required for tcp checks", PropHealthPort)
	}
	if v, ok := e.property(PropHealthPath); ok && v != "" && h.protocol != "" && h.protocol != config.ProtocolTCP {
		if !strings.HasPrefix(v, "/") {
			return h, fmt.Errorf("%s: %q: a path starts with /", PropHealthPath, v)
		}
		h.path = v
	}
	if v, ok := e.property(PropPolicy); ok && v != "" {
		switch config.Policy(v) {
		case config.PolicySimple:
			if h.protocol != "" {
				return h, fmt.Errorf("%s: simple answers every record, healthy or not: leave it out with health checks", PropPolicy)
			}
		case config.PolicyMultivalue:
		default:
			return h, fmt.Errorf("%s: %q: want simple or multivalue", PropPolicy, v)
		}
		h.policy = config.Policy(v)
	}
	return h, nil
}

// properties returns h as the canonical properties an endpoint carries after adjustment and
// in the records the provider lists, sorted by name: none without checks.
func (h health) properties() []ProviderSpecific {
	if h.protocol == "" {
		return nil
	}
	out := []ProviderSpecific{{Name: PropHealthCheck, Value: string(h.protocol)}}
	if h.path != "" {
		out = append(out, ProviderSpecific{Name: PropHealthPath, Value: h.path})
	}
	out = append(out, ProviderSpecific{Name: PropHealthPort, Value: strconv.Itoa(h.port)},
		ProviderSpecific{Name: PropPolicy, Value: string(h.policy)})
	slices.SortFunc(out, func(a, b ProviderSpecific) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// adjust returns the endpoint as the provider stores it: name in lower case without the
// final dot, properties canonical. It fails for what cannot be stored.
func adjust(e *Endpoint) (*Endpoint, error) {
	if !slices.Contains(supported, e.RecordType) {
		return nil, fmt.Errorf("%s: type %s is not served", e.DNSName, e.RecordType)
	}
	if e.SetIdentifier != "" {
		return nil, fmt.Errorf("%s: set identifiers (one name and type in several record sets) are not supported", e.DNSName)
	}
	if len(e.Targets) == 0 {
		return nil, fmt.Errorf("%s %s: no targets", e.DNSName, e.RecordType)
	}
	h, err := healthOf(e)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", e.DNSName, e.RecordType, err)
	}
	owner := strings.TrimSuffix(strings.ToLower(e.DNSName), ".") + "."
	for _, t := range e.Targets {
		if _, err := rdata.Parse(owner, dns.StringToType[e.RecordType], 0, t); err != nil {
			return nil, fmt.Errorf("%s %s: target %q: %w", e.DNSName, e.RecordType, t, err)
		}
	}
	out := *e
	out.DNSName = strings.TrimSuffix(strings.ToLower(e.DNSName), ".")
	out.Targets = slices.Clone(e.Targets)
	out.ProviderSpecific = h.properties()
	return &out, nil
}

// checkID returns the ID of the check of one target of the record set owner/rtype: stable,
// so that the same endpoint always names the same checks.
func checkID(owner, rtype, target string) string {
	sum := sha256.Sum256([]byte(owner + "/" + rtype + "/" + target))
	return "edns-" + hex.EncodeToString(sum[:8])
}

// isOwnCheck reports whether id is a check this provider made.
func isOwnCheck(id string) bool { return strings.HasPrefix(id, "edns-") }

// recordSet returns the record set an endpoint becomes, and the checks of its targets.
func recordSet(e *Endpoint) (config.RecordSet, []config.Check, error) {
	h, err := healthOf(e)
	if err != nil {
		return config.RecordSet{}, nil, err
	}
	owner := strings.TrimSuffix(strings.ToLower(e.DNSName), ".") + "."
	rs := config.RecordSet{Name: owner, Type: config.RecordType(e.RecordType), Policy: h.policy}
	if e.RecordTTL > 0 {
		rs.TTL = config.TTL(uint32(min(e.RecordTTL, 1<<31-1)))
	}
	var checks []config.Check
	for _, t := range e.Targets {
		r := config.Record{Value: t}
		if h.protocol != "" {
			c := config.Check{ID: checkID(owner, e.RecordType, t), Protocol: h.protocol,
				Target: config.Target{Host: t, Port: h.port}, Path: h.path}
			checks = append(checks, c)
			r.HealthCheck = c.ID
		}
		rs.Records = append(rs.Records, r)
	}
	return rs, checks, nil
}

// checkIDs returns the IDs of the checks an endpoint's record set has.
func checkIDs(e *Endpoint) []string {
	if v, _ := e.property(PropHealthCheck); v == "" || (e.RecordType != "A" && e.RecordType != "AAAA") {
		return nil
	}
	owner := strings.TrimSuffix(strings.ToLower(e.DNSName), ".") + "."
	var ids []string
	for _, t := range e.Targets {
		ids = append(ids, checkID(owner, e.RecordType, t))
	}
	return ids
}

// endpointOf returns the endpoint a stored record set shows ExternalDNS; check is the
// stored check of its first record when the provider made it (nil otherwise). ok is false
// for a record set ExternalDNS cannot see (an alias, or one of a type it does not write).
func endpointOf(rs *config.RecordSet, check *config.Check) (*Endpoint, bool) {
	if rs.Alias != "" || len(rs.Records) == 0 || !slices.Contains(supported, string(rs.Type)) {
		return nil, false
	}
	e := &Endpoint{DNSName: strings.TrimSuffix(rs.Name, "."), RecordType: string(rs.Type)}
	if rs.TTL != nil {
		e.RecordTTL = int64(*rs.TTL)
	}
	for _, r := range rs.Records {
		v := r.Value
		switch rs.Type {
		case "CNAME", "NS", "PTR", "MX", "SRV":
			// Names as ExternalDNS writes them: without the final dot.
			v = strings.TrimSuffix(v, ".")
		}
		e.Targets = append(e.Targets, v)
	}
	if check != nil {
		h := health{protocol: check.Protocol, port: check.Target.Port, policy: rs.Policy}
		if h.protocol != config.ProtocolTCP {
			h.path = check.Path
			if h.path == "" {
				h.path = "/"
			}
		}
		e.ProviderSpecific = h.properties()
	}
	return e, true
}
