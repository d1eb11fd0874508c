package api

import (
	"slices"
	"testing"
)

func TestOperations(t *testing.T) {
	for _, tag := range []string{"control", "status"} {
		ops, err := Operations(tag)
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) < 5 {
			t.Errorf("%s: only %d operations: %v", tag, len(ops), ops)
		}
	}
	ops, _ := Operations("status")
	if !slices.Contains(ops, "GET /v1/verdicts") {
		t.Errorf("status operations lack GET /v1/verdicts: %v", ops)
	}
	if ops, _ := Operations("no-such-tag"); len(ops) != 0 {
		t.Errorf("an unknown tag has operations: %v", ops)
	}
}
