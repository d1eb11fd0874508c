// Package config is Vigil's configuration model: the regions, health checks, zones and record
// sets that one document holds. It owns their defaults, their file format (YAML, or JSON,
// which is YAML too) and their validation.
//
// The same model travels through the control plane, the checkers and the DNS locations. It is
// plain data: nothing in this package performs I/O beyond reading the bytes it is given.
package config

// Protocol names how a check probes its target, or that it is calculated from other checks.
type Protocol string

// The protocols a check may use.
const (
	ProtocolHTTP  Protocol = "http"
	ProtocolHTTPS Protocol = "https"
	ProtocolTCP   Protocol = "tcp"
	// ProtocolGRPC asks a gRPC server's health service (grpc.health.v1.Health/Check).
	ProtocolGRPC Protocol = "grpc"
	// ProtocolDNS queries a DNS server for a name and type.
	ProtocolDNS        Protocol = "dns"
	ProtocolCalculated Protocol = "calculated"
)

// Policy is a record set's routing policy: how a DNS location chooses among its records.
type Policy string

// The routing policies of a record set.
const (
	PolicySimple     Policy = "simple"
	PolicyFailover   Policy = "failover"
	PolicyWeighted   Policy = "weighted"
	PolicyMultivalue Policy = "multivalue"
	// PolicyNearest answers the healthy records of the location's own region, else of the
	// nearest region that has one (by the round-trip time the location measures to each
	// region's nodes), else every record of the nearest region (last resort). Each record
	// names its region.
	PolicyNearest Policy = "nearest"
)

// Role is a record's role in a failover record set.
type Role string

// The failover roles.
const (
	RolePrimary   Role = "primary"
	RoleSecondary Role = "secondary"
)

// RecordType is the DNS type of a record set.
type RecordType string

// The record types a zone may hold.
const (
	TypeA     RecordType = "A"
	TypeAAAA  RecordType = "AAAA"
	TypeCNAME RecordType = "CNAME"
	TypeTXT   RecordType = "TXT"
	TypeMX    RecordType = "MX"
	TypeNS    RecordType = "NS"
	TypeSRV   RecordType = "SRV"
	TypeCAA   RecordType = "CAA"
	TypePTR   RecordType = "PTR"
	TypeDS    RecordType = "DS"
)

// TypeSOA is the type of a zone's SOA record: a dns check may query it, a record set may not
// hold it (locations write the SOA from the zone's settings).
const TypeSOA RecordType = "SOA"

// Document is one whole configuration: everything the control plane stores and every
// data-plane node runs from.
type Document struct {
	// Regions names the places that checks and nodes refer to, e.g. "us-east": unique,
	// lower-case words of letters and digits joined by '-', starting with a letter.
	Regions []string `yaml:"regions" json:"regions"`
	// Quorum holds the location-wide settings of verdicts: freshness and hold time.
	Quorum QuorumSettings `yaml:"quorum" json:"quorum"`
	// NameServers configures the fleet of virtual name servers that zones are sharded over.
	NameServers NameServerSettings `yaml:"name_servers" json:"name_servers"`
	// Notifications, when set, says whom to tell when verdicts change (package notify).
	Notifications *Notifications `yaml:"notifications" json:"notifications,omitempty"`
	// Checks are the health checks, probed or calculated. (Checks and Zones stay the last
	// fields: the control plane streams them after the others.)
	Checks []Check `yaml:"checks" json:"checks"`
	// Zones are the DNS zones that locations serve authoritatively.
	Zones []Zone `yaml:"zones" json:"zones"`
}

// QuorumSettings are the rules every location applies to the reports it holds.
type QuorumSettings struct {
	// FreshnessWindow is how long a checker's reports count after this location last heard
	// that checker make progress. Older reports count neither for nor against. 1s to 10m,
	// default 15s.
	FreshnessWindow Duration `yaml:"freshness_window" json:"freshness_window"`
	// Hold is how long a location keeps its previous verdict when too few reports are fresh,
	// before the verdict becomes unknown (fail static, then fail open). 0 to 1h, default 60s.
	Hold Duration `yaml:"hold" json:"hold"`
}

// NameServerSettings describe the virtual name servers of Route 53 style shuffle sharding:
// Fleet servers named ns-<n>.<Domain>, ShardSize of them per zone, and no two zones sharing
// more than MaxOverlap of them when Mode is "stateful".
type NameServerSettings struct {
	// Domain is the domain the virtual name servers are named under. Default "ns.vigil.test.".
	Domain string `yaml:"domain" json:"domain"`
	// Fleet is the number of virtual name servers: 1 to 65536, default 2048.
	Fleet int `yaml:"fleet" json:"fleet"`
	// ShardSize is the number of name servers each zone gets: 1 to 13 and at most Fleet,
	// default 4.
	ShardSize int `yaml:"shard_size" json:"shard_size"`
	// MaxOverlap is the most name servers two zones may share in stateful mode. Default 2.
	MaxOverlap int `yaml:"max_overlap" json:"max_overlap"`
	// Mode is "stateless" (derived from the zone name, no guarantee) or "stateful" (allocated
	// by the control plane with the overlap guarantee). Default "stateless".
	Mode string `yaml:"mode" json:"mode"`
}

// Target is what a check probes: a host (an IP address or a host name resolved at each probe)
// and a port.
type Target struct {
	// Host is an IP address or a host name.
	Host string `yaml:"host" json:"host"`
	// Port is the port; defaults to 80 for http, 443 for https and 53 for dns, required for
	// tcp and grpc.
	Port int `yaml:"port" json:"port"`
}

// Check is the configuration of one health check.
type Check struct {
	// ID names the check; records and calculated checks refer to it by this name. Unique,
	// lower-case letters, digits, '.', '_' and '-' ([a-z0-9][a-z0-9._-]*), at most 64 bytes.
	ID string `yaml:"id" json:"id"`
	// Protocol is http, https, tcp, grpc, dns or calculated.
	Protocol Protocol `yaml:"protocol" json:"protocol"`
	// Target is the address probed (not used by calculated checks).
	Target Target `yaml:"target" json:"target"`
	// IPVersion chooses the address family a host name resolves to: 4 (default) or 6.
	IPVersion int `yaml:"ip_version" json:"ip_version"`

	// Path is the HTTP request path. Default "/".
	Path string `yaml:"path" json:"path"`
	// Method is the HTTP method. Default GET.
	Method string `yaml:"method" json:"method"`
	// HostHeader overrides the HTTP Host header; default the target host.
	HostHeader string `yaml:"host_header" json:"host_header"`
	// SNI overrides the TLS server name; default the host header or target host.
	SNI string `yaml:"sni" json:"sni"`
	// Headers are extra HTTP request headers.
	Headers map[string]string `yaml:"headers" json:"headers"`
	// ExpectStatus lists the HTTP status ranges counted as healthy. Default 200-399.
	ExpectStatus []StatusRange `yaml:"expect_status" json:"expect_status"`
	// BodyMatch, when set, must appear within the first BodyMatchLimit bytes of the body.
	BodyMatch string `yaml:"body_match" json:"body_match"`
	// TLSVerify verifies the server's certificate chain and name. Default true.
	TLSVerify bool `yaml:"tls_verify" json:"tls_verify"`
	// FollowRedirects follows HTTP redirects (each hop checked like the first). Default false.
	FollowRedirects bool `yaml:"follow_redirects" json:"follow_redirects"`
	// KeepAlive lets a probe send its request on the connection the check's previous probe
	// left open (HTTP/1.1; GET, HEAD or OPTIONS; never after a redirect), as a client with
	// keep-alive does; a connection serves at most 30s after it was opened. Default false:
	// every probe opens a fresh connection, so a server that stops accepting connections
	// fails the next probe.
	KeepAlive bool `yaml:"keep_alive" json:"keep_alive,omitempty"`
	// HTTP2 speaks HTTP/2 from the first byte: an https probe offers only h2 by ALPN and
	// fails when the server does not agree; an http probe speaks h2c with prior knowledge.
	// Default false: HTTP/1.1, and h2 only with an https server that shows it speaks
	// nothing else.
	HTTP2 bool `yaml:"http2" json:"http2,omitempty"`
	// TLSCA, when set, is a bundle of PEM certificates (a private CA) that alone verify the
	// server's certificate, instead of the checker's roots; https and grpc checks with TLS.
	TLSCA string `yaml:"tls_ca" json:"tls_ca,omitempty"`

	// GRPC configures a grpc check: which service to ask about, and whether over TLS.
	GRPC *GRPCProbe `yaml:"grpc" json:"grpc,omitempty"`
	// DNS configures a dns check: the query and the answer counted as healthy. Required for
	// dns checks.
	DNS *DNSProbe `yaml:"dns" json:"dns,omitempty"`

	// Interval is the time between probes by one checker: 1s to 300s, default 10s.
	Interval Duration `yaml:"interval" json:"interval"`
	// Timeout bounds one probe; it must be shorter than Interval. Default 4s.
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// FailureThreshold is the number of consecutive failures that turn a checker's report
	// unhealthy: 1 to 10, default 3.
	FailureThreshold int `yaml:"failure_threshold" json:"failure_threshold"`
	// SuccessThreshold is the number of consecutive successes that turn it healthy again:
	// 1 to 10, default 3.
	SuccessThreshold int `yaml:"success_threshold" json:"success_threshold"`

	// Regions are the regions whose checkers probe this check. Default: every region of the
	// document (filled in when the document is decoded; a calculated check has none).
	Regions []string `yaml:"regions" json:"regions"`
	// AllowFewerRegions permits fewer than MinCheckRegions regions.
	AllowFewerRegions bool `yaml:"allow_fewer_regions" json:"allow_fewer_regions"`
	// CheckersPerRegion is the shard size k: how many checkers of each region probe the
	// check: 1 to 16, default 2.
	CheckersPerRegion int `yaml:"checkers_per_region" json:"checkers_per_region"`
	// HealthyThreshold is the fraction of fresh reports that must be healthy, strictly
	// exceeded, for a healthy verdict. Default 0.18 (Route 53: more than 18%).
	HealthyThreshold float64 `yaml:"healthy_threshold" json:"healthy_threshold"`
	// MinReporters is how many fresh reports a verdict needs: at least 1, at most the number
	// of assigned checkers (regions × checkers_per_region). Default 1.
	MinReporters int `yaml:"min_reporters" json:"min_reporters"`
	// Inverted flips the verdict: healthy becomes unhealthy and back.
	Inverted bool `yaml:"inverted" json:"inverted"`
	// Disabled makes the check always healthy, whatever its probes say.
	Disabled bool `yaml:"disabled" json:"disabled"`

	// Children are the checks a calculated check combines.
	Children []string `yaml:"children" json:"children"`
	// MinHealthy is how many children must be healthy for a calculated check to be healthy.
	// Default len(Children) (AND); 1 is OR.
	MinHealthy int `yaml:"min_healthy" json:"min_healthy"`
}

// GRPCProbe is what a grpc check asks: grpc.health.v1.Health/Check for Service. Healthy when
// the call succeeds (grpc-status 0) and the answer is SERVING. The answer's message may hold
// at most 4 KiB (a HealthCheckResponse is 2 bytes); a longer one fails with reason protocol.
// grpc-status 4 (DEADLINE_EXCEEDED) counts as reason timeout, like a call that outlives the
// check's timeout.
type GRPCProbe struct {
	// Service is the service name asked about; "" (default) asks about the whole server.
	Service string `yaml:"service" json:"service,omitempty"`
	// TLS speaks TLS (ALPN h2) to the server; default false: HTTP/2 without TLS (h2c), as
	// Kubernetes' gRPC probes do.
	TLS bool `yaml:"tls" json:"tls,omitempty"`
}

// DNSProbe is what a dns check asks a DNS server, and what counts as a healthy answer.
type DNSProbe struct {
	// Name is the name queried, e.g. www.example.com (a final dot is optional). Required.
	Name string `yaml:"name" json:"name"`
	// Type is the type queried: A (default), AAAA, CNAME, TXT, MX, NS or SOA.
	Type RecordType `yaml:"type" json:"type,omitempty"`
	// Rcode is the response code counted as healthy: NOERROR (default), NXDOMAIN, SERVFAIL,
	// REFUSED, FORMERR, NOTIMP, YXDOMAIN, YXRRSET, NXRRSET, NOTAUTH or NOTZONE.
	Rcode string `yaml:"rcode" json:"rcode,omitempty"`
	// Answer, when set, must be the value of one of the answer's records of Type, written as
	// a record set's value is ("192.0.2.1", "10 mail.example.com."), and is compared as data:
	// a TXT answer in quoted strings ("v=spf1 " "-all", escapes \" \\ \DDD) must equal the
	// record's strings; one written plain (café) must equal their bytes joined. Not for SOA.
	Answer string `yaml:"answer" json:"answer,omitempty"`
	// Recursion sets the query's RD bit, for a check of a resolver. Default false: a
	// question for an authoritative server.
	Recursion bool `yaml:"recursion" json:"recursion,omitempty"`
	// Transport is udp (default; a truncated answer is asked again over TCP) or tcp.
	Transport string `yaml:"transport" json:"transport,omitempty"`
}

// Zone is a DNS zone that locations answer for authoritatively.
type Zone struct {
	// Name is the apex, e.g. "demo.vigil.test." (normalised to lower case with the final dot).
	Name string `yaml:"name" json:"name"`
	// TTL is the default TTL of the zone's record sets, in seconds. Default 60.
	TTL uint32 `yaml:"ttl" json:"ttl"`
	// SOA holds the fields of the zone's SOA record.
	SOA SOA `yaml:"soa" json:"soa"`
	// NameServers, when set, are the zone's NS records; otherwise they come from its
	// name-server shard.
	NameServers []string `yaml:"name_servers" json:"name_servers"`
	// DNSSEC, when enabled, makes DNS locations sign the zone's answers online (see package
	// dnssec). Off by default.
	DNSSEC *DNSSEC `yaml:"dnssec" json:"dnssec,omitempty"`
	// Transfers hands the zone to secondary name servers by AXFR/IXFR and NOTIFY; nil when
	// it has none (transfers.go).
	Transfers *Transfers `yaml:"transfers" json:"transfers,omitempty"`
	// RecordSets are the zone's record sets, at most one per (name, type).
	RecordSets []RecordSet `yaml:"record_sets" json:"record_sets"`
}

// DNSSEC is a zone's online signing. Its keys are never part of the configuration: the
// control plane generates them when signing is enabled and keeps them, sealed, in its own
// state.
type DNSSEC struct {
	// Enabled signs the zone's answers to queries with the DO bit.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Keys is the key scheme: "combined" (default: one combined signing key, CSK) or "split"
	// (a key-signing key and a zone-signing key). It applies when the keys are generated.
	Keys string `yaml:"keys" json:"keys,omitempty"`
	// DNSKEYTTL is the TTL of the DNSKEY record set, in seconds. Default 3600.
	DNSKEYTTL uint32 `yaml:"dnskey_ttl" json:"dnskey_ttl,omitempty"`
	// Denial is how the zone proves that a name or type does not exist: "compact"
	// (default: an NSEC record made for each name denied, which reveals no other name) or
	// "nsec" (the NSEC chain of the zone's names: its signatures are cached, and anyone can
	// list the names); see docs/dnssec-signing.md.
	Denial string `yaml:"denial" json:"denial,omitempty"`
}

// The denial modes of a signed zone (DNSSEC.Denial).
const (
	// DenialCompact proves each denial with an NSEC record made for the name asked ("black
	// lies", RFC 9824): the zone's names cannot be listed from its answers, and every
	// name that does not exist costs a new signature.
	DenialCompact = "compact"
	// DenialNSEC proves denials with the NSEC chain of the zone's names (RFC 4035): the
	// signatures are reused from the cache whatever the name asked, so a flood of names
	// that do not exist costs no new signature; anyone may list the zone's names by
	// walking the chain.
	DenialNSEC = "nsec"
)

// DenialMode returns the zone's denial mode: DenialCompact unless it says DenialNSEC.
func (d *DNSSEC) DenialMode() string {
	if d != nil && d.Denial == DenialNSEC {
		return DenialNSEC
	}
	return DenialCompact
}

// Signed reports whether the zone's answers are signed.
func (z *Zone) Signed() bool { return z.DNSSEC != nil && z.DNSSEC.Enabled }

// SOA holds the fields of a zone's SOA record. Times are in seconds, as in the record.
type SOA struct {
	// MName is the primary name server. Default: the zone's first explicit name server (its
	// first name_servers entry, or the first value of an NS record set at its apex); left
	// empty when it has none, for the DNS location to fill from the zone's name-server shard.
	MName string `yaml:"mname" json:"mname"`
	// RName is the mailbox of the person responsible, as a domain name. Default
	// "hostmaster.<zone>".
	RName string `yaml:"rname" json:"rname"`
	// Serial is the zone serial. Default 1; the control plane sets it from its index.
	Serial uint32 `yaml:"serial" json:"serial"`
	// Refresh, Retry and Expire are for secondaries. Defaults 7200, 900, 1209600.
	Refresh uint32 `yaml:"refresh" json:"refresh"`
	Retry   uint32 `yaml:"retry" json:"retry"`
	Expire  uint32 `yaml:"expire" json:"expire"`
	// Minimum is the negative-caching TTL (RFC 2308). Default 300.
	Minimum uint32 `yaml:"minimum" json:"minimum"`
	// TTL is the TTL of the SOA record itself. Default 900.
	TTL uint32 `yaml:"ttl" json:"ttl"`
}

// RecordSet is all the records of one name and type, and the policy that chooses among them.
type RecordSet struct {
	// Name is the owner name: relative to the zone ("www"), "@" for the apex, or absolute
	// with a final dot. A name that already ends with the zone's name is absolute without
	// the dot too ("www.example.com" in zone example.com). Normalised to the absolute
	// lower-case name with the final dot. A first label "*" makes a wildcard (RFC 4592):
	// "*" or "*.eu" answers for the names below it that the zone does not hold.
	Name string `yaml:"name" json:"name"`
	// Type is the record type: A, AAAA, CNAME, TXT, MX, NS, SRV, CAA, PTR or DS. NS below the
	// apex delegates the name to other name servers; DS sits beside such an NS.
	Type RecordType `yaml:"type" json:"type"`
	// TTL in seconds, 0 included (answers not to be cached); unset (nil), the zone's TTL.
	TTL *uint32 `yaml:"ttl" json:"ttl,omitempty"`
	// Policy is the routing policy. Default simple.
	Policy Policy `yaml:"policy" json:"policy"`
	// Alias, when set, makes an A or AAAA record set without records of its own answer as the
	// record set of its type at this other name of the zone does (Route 53's alias): the
	// target's records, chosen by the target's policy and health checks at each query, with
	// the target's TTL. A name as Name writes it ("www", "@", or absolute); normalised the
	// same way. An alias whose target has no record set of its type answers no data.
	Alias string `yaml:"alias" json:"alias,omitempty"`
	// Records are the candidate values.
	Records []Record `yaml:"records" json:"records"`
	// NoHealthy is what the set answers when none of the records its policy considers is
	// healthy: all (default: every record treated as healthy, Route 53's last resort),
	// nodata (an empty answer) or fallback (the Fallback record). Not for simple sets, which
	// do not consult health checks.
	NoHealthy NoHealthy `yaml:"no_healthy" json:"no_healthy,omitempty"`
	// Fallback is the record answered with no_healthy: fallback, a value as Records' are.
	Fallback string `yaml:"fallback" json:"fallback,omitempty"`
	// ManagedBy names the program that owns the record set, empty for one managed by hand
	// (vigil apply, the API). Vigil's ExternalDNS provider marks the record sets it creates
	// with its owner name ("external-dns" by default) and changes or deletes no record set
	// without that mark. 1 to 63 letters, digits and "-._/".
	ManagedBy string `yaml:"managed_by" json:"managed_by,omitempty"`
}

// Record is one value of a record set, with what the routing policy needs to know about it.
type Record struct {
	// Value is the record data in presentation form, as package rdata reads it: "192.0.2.1",
	// "10 mail.example.com.", "\"v=spf1 -all\"". Domain names in it (CNAME, NS, PTR, MX,
	// SRV targets) are fully qualified, the final dot optional (as in Route 53). A TXT value
	// is one or more quoted strings with escapes, or else any text taken byte for byte.
	// Normalised: addresses as net/netip writes them, names lower-case with the final dot;
	// TXT and CAA values stay as written.
	Value string `yaml:"value" json:"value"`
	// HealthCheck names the check that decides this record's health; empty means healthy.
	HealthCheck string `yaml:"health_check" json:"health_check,omitempty"`
	// Weight is the record's weight in a weighted record set, 0 to 255.
	Weight *int `yaml:"weight" json:"weight,omitempty"`
	// Role is the record's role in a failover record set.
	Role Role `yaml:"role" json:"role,omitempty"`
	// Region is the region the record's endpoint is in, one of the document's regions:
	// required in a nearest record set, and only there.
	Region string `yaml:"region" json:"region,omitempty"`
}

// TTL returns a pointer to seconds, for a record set's TTL.
func TTL(seconds uint32) *uint32 { return &seconds }

// EffectiveTTL returns the TTL rs is served with in a zone whose default TTL is zoneTTL: its
// own when set, else the zone's.
func (rs *RecordSet) EffectiveTTL(zoneTTL uint32) uint32 {
	if rs.TTL != nil {
		return *rs.TTL
	}
	return zoneTTL
}
