package doctest

import "testing"

// TestMatch pins the walkthroughs' convention for expected output.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"a\nb\n", []string{"a", "b"}, true},
		{"a\nb\n", []string{"a"}, false},
		{"a\n", []string{"a", "b"}, false},
		{"a\nb\nc\n", []string{"a", "..."}, true},
		{"a\nb\nc\n", []string{"...", "c"}, true},
		{"a\nb\nc\n", []string{"a", "...", "b", "c"}, true},
		{"a\nb\nc\n", []string{"...", "b"}, false},
		{"web  healthy  3s ago  \n", []string{"web  healthy  ..."}, true},
		{"web  unhealthy  3s ago\n", []string{"web  healthy  ..."}, false},
		{"id 7f3a set until 12:00\n", []string{"id ... set until ..."}, true},
		{"id 7f3a cleared\n", []string{"id ... set until ..."}, false},
		{"1 alice x set_override\n", []string{"1 ...alice ...set_override"}, true},
		{"abc\n", []string{"ab...bc"}, false},
		{"abbc\n", []string{"ab...bc"}, true},
		{"", nil, true},
		{"x\n", nil, false},
	} {
		if got := Match(c.got, c.want); got != c.ok {
			t.Errorf("Match(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
	steps, err := Steps("text\n```console\n$ a \\\n    b\nout\n$ c\n```\n$ not a command\n")
	if err != nil || len(steps) != 2 || steps[0].Cmd != "a b" || len(steps[0].Want) != 1 || steps[1].Cmd != "c" {
		t.Errorf("Steps = %+v, %v", steps, err)
	}
	// What the earlier conventions of the walkthroughs wrote keeps its meaning: a line ending in
	// "..." is a prefix, a last line "..." any further lines, and exact lines an exact count.
	for _, c := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"answers 192.0.2.1 after 3s\n", []string{"answers 192.0.2.1 after ..."}, true},
		{"answers 192.0.2.2 after 3s\n", []string{"answers 192.0.2.1 after ..."}, false},
		{"x\ny\n", []string{"x", "y", "..."}, true},
	} {
		if got := Match(c.got, c.want); got != c.ok {
			t.Errorf("Match(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
	if _, err := Steps("```console\nout first\n```\n"); err == nil {
		t.Error("Steps accepted output before the first command")
	}
}
