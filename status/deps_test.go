package status

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoRuntimeImports: the status package reads a node through its views and serialises the
// domain's types; it imports no runtime: not the node, not gossip, not the control plane (its
// raft, storage and API; control/state, which links none of them, holds what it shows of it).
func TestNoRuntimeImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"github.com/vigil-dns/vigil/agent", "github.com/vigil-dns/vigil/gossip",
		"github.com/vigil-dns/vigil/control", "github.com/vigil-dns/vigil/location/verdict", "github.com/hashicorp/raft"}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") && !strings.HasPrefix(dep, "github.com/vigil-dns/vigil/control/state") {
				t.Errorf("status depends on %s", dep)
			}
		}
	}
}
