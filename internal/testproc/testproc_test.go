package testproc

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStartStops: the process's output is kept, and it is stopped when the test ends.
func TestStartStops(t *testing.T) {
	var exited <-chan struct{}
	t.Run("inner", func(t *testing.T) {
		var out interface{ String() string }
		out, exited = Start(t, exec.Command("sh", "-c", "echo started; exec sleep 60"))
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), "started") {
			if time.Now().After(deadline) {
				t.Fatalf("output: %q", out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-exited:
			t.Fatal("the process exited on its own")
		default:
		}
	})
	select {
	case <-exited:
	default:
		t.Fatal("the process outlived its test")
	}
}
