package netlab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// needReal skips the test when the machine cannot run real-process networks.
func needReal(t *testing.T) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skip(err)
	}
}

// testPrefix names a test's namespaces after the test process, so the sweeper knows them.
func testPrefix() string { return fmt.Sprintf("%s%d-", namePrefix, os.Getpid()) }

// binaries caches the vigil binaries the tests build, by build tags.
var binaries = struct {
	sync.Mutex
	dir  string
	done map[string]string
}{done: map[string]string{}}

// vigilBinary builds cmd/vigil with tags (once per test process) and returns its path.
func vigilBinary(t *testing.T, tags string) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	if p, ok := binaries.done[tags]; ok {
		return p
	}
	if binaries.dir == "" {
		d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-bin-", namePrefix, os.Getpid()))
		if err != nil {
			t.Fatal(err)
		}
		binaries.dir = d
	}
	out := filepath.Join(binaries.dir, "vigil"+strings.ReplaceAll(tags, ",", "-"))
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "github.com/vigil-dns/vigil/cmd/vigil")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", tags, err, b)
	}
	binaries.done[tags] = out
	return out
}

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// leftovers returns the namespaces and processes of this test process's runs that still
// exist.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasPrefix(name, prefix) {
			left = append(left, "namespace "+name)
		}
	}
	return left
}
