package zonefile

import (
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// FuzzImport: any text imports without a panic; every problem names a line of the file; a
// file without errors gives a document that validates, holding as many records as it says.
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		"$TTL 60\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
		"www 300 IN A 192.0.2.1\n AAAA 2001:db8::1\n",
		"@ 60 TXT \"a\" \"b\\\"c\" (\n \"d\" )\n",
		"sub 60 NS ns.sub\nns.sub 60 A 192.0.2.2\nx.sub 60 TXT \"hidden\"\n",
		"$ORIGIN sub.example.com.\n* 60 MX 10 mail\n",
		"a 60 CAA 0 issue \"ca\"\nb 60 SRV 1 2 3 t\nc 60 PTR x.\nd 60 DS 1 13 2 " + strings.Repeat("ab", 32) + "\n",
		"( ) \" ; \\",
		"$GENERATE 1-2 a$ A 1.2.3.$\n$INCLUDE x\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		res, err := Import("f", []byte(text), Options{Zone: "example.com"})
		if err != nil {
			t.Fatalf("Import: %v", err)
		}
		lines := strings.Count(text, "\n") + 1
		for _, ps := range [][]Problem{res.Errors, res.Omitted, res.Notes} {
			for _, p := range ps {
				if p.Line < 1 || p.Line > lines {
					t.Fatalf("%s: line out of the file's %d", p, lines)
				}
			}
		}
		if len(res.Errors) > 0 {
			if res.Document != nil {
				t.Fatal("a document despite errors")
			}
			return
		}
		doc, err := config.Parse(res.Text)
		if err != nil {
			t.Fatalf("the document does not validate: %v\n%s", err, res.Text)
		}
		n := 0
		for _, rs := range doc.Zones[0].RecordSets {
			n += len(rs.Records)
		}
		if n != res.Records {
			t.Fatalf("the document holds %d records, the result says %d", n, res.Records)
		}
	})
}
