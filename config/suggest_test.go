package config

import (
	"reflect"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"port", "port", 0}, {"prot", "port", 1}, {"regoins", "regions", 1},
		{"intervall", "interval", 1}, {"wieght", "weight", 1}, {"", "abc", 3}, {"colour", "color", 1},
		{"kitten", "sitting", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosestField(t *testing.T) {
	fields := yamlFields(reflect.TypeFor[Check]())
	for key, want := range map[string]string{
		"protocl": "protocol", "intervall": "interval", "tiemout": "timeout",
		"colour": "", "x": "", "zzzzzzzz": "",
	} {
		if got := closest(key, fields); got != want {
			t.Errorf("closest(%q) = %q, want %q", key, got, want)
		}
	}
}
