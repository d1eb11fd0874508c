package safetext

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, s := range []string{"reason\nforged row", "a\rb", "tab\there", "\x1b[2J", "\u009b31m", "bidi \u202eevil", "iso \u2066x\u2069", "line\u2028sep", "del\x7f", "bad \xff utf8"} {
		if Check(s) == nil {
			t.Errorf("Check(%q) passed", s)
		}
	}
	for _, s := range []string{"", "maintenance window, ticket OPS-12", "café 東京 ✓", `C:\path\n is text`} {
		if err := Check(s); err != nil {
			t.Errorf("Check(%q): %v", s, err)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"a\nb\tc\rd":            `a\nb\tc\rd`,
		"\x1b[31mred":           `\x1b[31mred`,
		"x\u202ey":              `x\u202ey`,
		"bad\xffbyte":           `bad\xffbyte`,
		"\u0085next line (NEL)": `\u0085next line (NEL)`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsFunc(Escape(in), Unsafe) {
			t.Errorf("Escape(%q) still unsafe", in)
		}
	}
}

func TestEscapeStrings(t *testing.T) {
	type inner struct {
		Text  string
		hid   string
		Bytes []byte
	}
	type outer struct {
		Name  string
		Items []inner
		Ptr   *inner
		Map   map[string]inner
		Any   any
	}
	v := outer{Name: "a\nb", Items: []inner{{Text: "\x1b]0;x\x07", hid: "\n", Bytes: []byte("\n")}},
		Ptr: &inner{Text: "\u202e"}, Map: map[string]inner{"k\n": {Text: "\r"}}, Any: inner{Text: "\t"}}
	EscapeStrings(&v)
	if v.Name != `a\nb` || v.Items[0].Text != `\x1b]0;x\a` || v.Items[0].hid != "\n" || string(v.Items[0].Bytes) != "\n" ||
		v.Ptr.Text != `\u202e` || v.Map[`k\n`].Text != `\r` || v.Any.(inner).Text != `\t` {
		t.Errorf("%+v %+v %+v", v, *v.Ptr, v.Map)
	}
}
