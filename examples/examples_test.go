package examples

import (
	"bytes"
	"os"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestDemo checks that the embedded demo is the file and a valid configuration.
func TestDemo(t *testing.T) {
	file, err := os.ReadFile("demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Demo(), file) {
		t.Error("the embedded demo differs from demo.yaml")
	}
	if _, err := config.Parse(Demo()); err != nil {
		t.Errorf("the embedded demo: %v", err)
	}
}
