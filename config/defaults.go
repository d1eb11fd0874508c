package config

import "time"

// Limits and defaults of the model, most of them Route 53's.
const (
	// BodyMatchLimit is how many bytes of a response body a body match searches.
	BodyMatchLimit = 5120
	// MaxBodyMatch is the longest body match string.
	MaxBodyMatch = 255
	// MinCheckRegions is how many regions a check needs unless it allows fewer.
	MinCheckRegions = 3
	// MaxChildren is the most children a calculated check may combine.
	MaxChildren = 256
	// MaxMultivalueAnswers is the most records a multivalue answer holds.
	MaxMultivalueAnswers = 8
	// DefaultHealthyThreshold is Route 53's rule: healthy when more than 18% report healthy.
	DefaultHealthyThreshold = 0.18
)

// DefaultCheck returns a check with every default applied and no identity or target.
func DefaultCheck() Check {
	return Check{
		IPVersion:         4,
		Path:              "/",
		Method:            "GET",
		ExpectStatus:      []StatusRange{{Low: 200, High: 399}},
		TLSVerify:         true,
		Interval:          Duration(10 * time.Second),
		Timeout:           Duration(4 * time.Second),
		FailureThreshold:  3,
		SuccessThreshold:  3,
		CheckersPerRegion: 2,
		HealthyThreshold:  DefaultHealthyThreshold,
		MinReporters:      1,
	}
}

// DefaultSOA returns the SOA timers used when a zone does not set them.
func DefaultSOA() SOA {
	return SOA{Serial: 1, Refresh: 7200, Retry: 900, Expire: 1209600, Minimum: 300, TTL: 900}
}

// DefaultZone returns a zone with default TTL and SOA timers and no name.
func DefaultZone() Zone { return Zone{TTL: 60, SOA: DefaultSOA()} }

// DefaultDocument returns an empty document with the location-wide defaults.
func DefaultDocument() Document {
	return Document{
		Quorum: QuorumSettings{
			FreshnessWindow: Duration(15 * time.Second),
			Hold:            Duration(60 * time.Second),
		},
		NameServers: NameServerSettings{
			Domain:     "ns.vigil.test.",
			Fleet:      2048,
			ShardSize:  4,
			MaxOverlap: 2,
			Mode:       "stateless",
		},
	}
}
