package externaldns

// MediaType is the webhook protocol's content type, version 1.
const MediaType = "application/external.dns.webhook+json;version=1"

// Endpoint is ExternalDNS's endpoint.Endpoint as the webhook protocol carries it (JSON field
// names as ExternalDNS writes them).
type Endpoint struct {
	DNSName          string             `json:"dnsName,omitempty"`
	Targets          []string           `json:"targets,omitempty"`
	RecordType       string             `json:"recordType,omitempty"`
	SetIdentifier    string             `json:"setIdentifier,omitempty"`
	RecordTTL        int64              `json:"recordTTL,omitempty"`
	Labels           map[string]string  `json:"labels,omitempty"`
	ProviderSpecific []ProviderSpecific `json:"providerSpecific,omitempty"`
}

// ProviderSpecific is one provider-specific property of an endpoint.
type ProviderSpecific struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Changes is ExternalDNS's plan.Changes: what one synchronisation applies.
type Changes struct {
	Create    []*Endpoint `json:"create,omitempty"`
	UpdateOld []*Endpoint `json:"updateOld,omitempty"`
	UpdateNew []*Endpoint `json:"updateNew,omitempty"`
	Delete    []*Endpoint `json:"delete,omitempty"`
}

// DomainFilter is ExternalDNS's endpoint.DomainFilter as negotiation returns it: the zones
// this provider manages.
type DomainFilter struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// property returns the value of the provider-specific property name, and whether it is set.
func (e *Endpoint) property(name string) (string, bool) {
	for _, p := range e.ProviderSpecific {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}
