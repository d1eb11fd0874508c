package netlab

import (
	"errors"
	"strings"
	"testing"
)

// Without ip and nft on the PATH, Check names both (and their Debian packages).
func TestCheckNamesWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Check()
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("Check without ip and nft: %v", err)
	}
	for _, want := range []string{"the ip command (Debian package iproute2)", "the nft command (Debian package nftables)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
}
