package control

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// TestEncodeCommandSameCheck: a put_check encoded for the log without its zero fields
// decodes to the command that the whole encoding decodes to, for the checks of the example
// documents and for checks whose lists, maps and numbers are empty but not nil, or -0.
func TestEncodeCommandSameCheck(t *testing.T) {
	var checks []config.Check
	for _, src := range []string{testDoc, scaleJSON(3)} {
		doc, err := decodeDocument([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, doc.Checks...)
	}
	if data, err := os.ReadFile("../examples/demo.yaml"); err == nil {
		doc, err := decodeDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, doc.Checks...)
	}
	checks = append(checks,
		config.Check{},
		config.Check{ID: "empty", Headers: map[string]string{}, ExpectStatus: []config.StatusRange{}, Regions: []string{}, Children: []string{}},
		config.Check{ID: "neg", HealthyThreshold: math.Copysign(0, -1), Target: config.Target{Port: 1}, GRPC: &config.GRPCProbe{}, DNS: &config.DNSProbe{}},
	)
	for i := range checks {
		c := &checks[i]
		for _, cmd := range []*state.Command{{Op: state.OpPutCheck, Check: c}, {Op: state.OpPutCheck, Check: c, Create: true}} {
			whole, err := json.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			short, err := encodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			var a, b state.Command
			if err := json.Unmarshal(whole, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(short, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) || math.Signbit(a.Check.HealthyThreshold) != math.Signbit(b.Check.HealthyThreshold) {
				t.Errorf("check %q:\n whole %s\n short %s\n decode to %+v\n and %+v", c.ID, whole, short, a.Check, b.Check)
			}
		}
	}
	other := &state.Command{Op: state.OpDeleteZone, ZoneName: "example.com"}
	whole, _ := json.Marshal(other)
	if short, err := encodeCommand(other); err != nil || string(short) != string(whole) {
		t.Errorf("a command without a check: %s, want %s (%v)", short, whole, err)
	}
}
