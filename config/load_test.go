package config

import "testing"

// TestSyntaxErrorLines checks that YAML syntax errors name the line an editor shows, for
// the parser's errors (which the library counts from 0) and the scanner's (from 1) alike.
func TestSyntaxErrorLines(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"regions: [us-east, eu-west\nchecks: []\n", "line 2: did not find expected ',' or ']'"},
		{"a: 1\n\nb: {x: 1\nc: 2\n", "line 3: did not find expected ',' or '}'"},
		{"a:\n  b: 1\n c: 2\n", "line 3: did not find expected key"},
		{"a: 1\nb: 2\n  c: 3\n", "line 3: mapping values are not allowed in this context"},
		{"a: 1\nb: @x\n", "line 2: found character that cannot start any token"},
	} {
		_, err := Decode([]byte(c.doc))
		if err == nil || err.Error() != c.want {
			t.Errorf("Decode(%q) = %v, want %s", c.doc, err, c.want)
		}
	}
}
