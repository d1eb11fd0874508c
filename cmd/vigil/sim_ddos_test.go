package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad invocations of vigil sim ddos say why, before any node starts.
func TestSimDDoSUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sim", "ddos", "extra"}, 2, "usage: vigil sim [-log-level level] ddos [flags]"},
		{[]string{"sim", "ddos", "-rate", "many"}, 2, "-rate"},
		{[]string{"sim", "ddos", "-zones", "1"}, 1, "zones 1: want 2 to 200"},
		{[]string{"sim", "ddos", "-fleet", "8", "-shard-size", "9"}, 1, "fleet 8, shard size 9"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(t.Context(), tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("vigil %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, errb.String(), tt.code, tt.want)
		}
	}
}
