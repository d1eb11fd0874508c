package control

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// encodeCommand encodes a command for the raft log. A check is written without its fields
// at their zero value (omitzero: a nil list, not an empty one; a check whose threshold is -0,
// which omitzero takes for 0, is written whole): decoded into a
// new Command, as the state machine does, the check is the same, field for field, and a
// voter of any version reads it. Its fields at their default are written (they are not
// zero), so an entry stays readable whatever the defaults become. The state machine decodes
// about a third faster (BenchmarkWritePath) on every voter.
func encodeCommand(cmd *state.Command) ([]byte, error) {
	var data []byte
	var err error
	if cmd.Check == nil || negativeZero(cmd.Check.HealthyThreshold) {
		data, err = json.Marshal(cmd)
	} else {
		data, err = json.Marshal(logCommand{Command: cmd, Check: (*logCheck)(cmd.Check)})
	}
	if err != nil {
		return nil, fmt.Errorf("control: encode command: %w", err)
	}
	return data, nil
}

// logCommand is a Command whose check is written as a logCheck (the shallower field hides
// the embedded one).
type logCommand struct {
	*state.Command
	Check *logCheck `json:"check,omitempty"`
}

// logCheck is config.Check with every field omitzero. It converts from config.Check (same
// fields, other tags): a field added there and not here does not compile.
type logCheck struct {
	ID       string          `json:"id,omitzero"`
	Protocol config.Protocol `json:"protocol,omitzero"`
	Target   config.Target   `json:"target,omitzero"`

	IPVersion int `json:"ip_version,omitzero"`

	Path            string               `json:"path,omitzero"`
	Method          string               `json:"method,omitzero"`
	HostHeader      string               `json:"host_header,omitzero"`
	SNI             string               `json:"sni,omitzero"`
	Headers         map[string]string    `json:"headers,omitzero"`
	ExpectStatus    []config.StatusRange `json:"expect_status,omitzero"`
	BodyMatch       string               `json:"body_match,omitzero"`
	TLSVerify       bool                 `json:"tls_verify,omitzero"`
	FollowRedirects bool                 `json:"follow_redirects,omitzero"`
	KeepAlive       bool                 `json:"keep_alive,omitzero"`
	HTTP2           bool                 `json:"http2,omitzero"`
	TLSCA           string               `json:"tls_ca,omitzero"`

	GRPC *config.GRPCProbe `json:"grpc,omitzero"`
	DNS  *config.DNSProbe  `json:"dns,omitzero"`

	Interval         config.Duration `json:"interval,omitzero"`
	Timeout          config.Duration `json:"timeout,omitzero"`
	FailureThreshold int             `json:"failure_threshold,omitzero"`
	SuccessThreshold int             `json:"success_threshold,omitzero"`

	Regions           []string `json:"regions,omitzero"`
	AllowFewerRegions bool     `json:"allow_fewer_regions,omitzero"`
	CheckersPerRegion int      `json:"checkers_per_region,omitzero"`
	HealthyThreshold  float64  `json:"healthy_threshold,omitzero"`
	MinReporters      int      `json:"min_reporters,omitzero"`
	Inverted          bool     `json:"inverted,omitzero"`
	Disabled          bool     `json:"disabled,omitzero"`

	Children   []string `json:"children,omitzero"`
	MinHealthy int      `json:"min_healthy,omitzero"`
}

// negativeZero reports whether f is -0.
func negativeZero(f float64) bool { return f == 0 && math.Signbit(f) }
