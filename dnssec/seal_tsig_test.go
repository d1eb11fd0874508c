package dnssec

import (
	"strings"
	"testing"
)

// A sealed TSIG secret opens with the secret that sealed it, also as an older secret after a
// change of secret, and only under its key's name; another secret does not open it and says
// what to give the node.
func TestSealTSIG(t *testing.T) {
	oldSecret, newSecret := []byte("tsig seal test old secret 000000"), []byte("tsig seal test new secret 000000")
	s, err := NewSealer(oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.SealTSIG("xfr.test.", []byte("c2VjcmV0IHNlY3JldCBzZWNyZXQh"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "c2VjcmV0") {
		t.Fatal("the sealed form holds the secret")
	}
	rotated, _ := NewSealer(newSecret, oldSecret)
	for _, sl := range []*Sealer{s, rotated} {
		if got, err := sl.OpenTSIG("xfr.test.", sealed); err != nil || string(got) != "c2VjcmV0IHNlY3JldCBzZWNyZXQh" {
			t.Errorf("open: %q %v", got, err)
		}
	}
	if _, err := s.OpenTSIG("other.test.", sealed); err == nil {
		t.Error("opened under another key's name")
	}
	other, _ := NewSealer(newSecret)
	if _, err := other.OpenTSIG("xfr.test.", sealed); err == nil || !strings.Contains(err.Error(), "-dnssec-secret-file") {
		t.Errorf("another secret: %v", err)
	}
	if _, err := s.OpenTSIG("xfr.test.", sealed[:5]); err == nil {
		t.Error("a truncated seal opened")
	}
}
