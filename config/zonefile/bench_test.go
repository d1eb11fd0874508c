package zonefile

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigZone returns a zone file of n records: addresses, and every tenth a TXT record.
func bigZone(n int) []byte {
	var b strings.Builder
	b.WriteString("$TTL 300\n@ SOA ns1 hostmaster 1 7200 900 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\n")
	for i := range n {
		if i%10 == 0 {
			fmt.Fprintf(&b, "host%d TXT \"v=spf1 include:_spf.example.net -all\" \"record %d\"\n", i, i)
			continue
		}
		fmt.Fprintf(&b, "host%d A 198.51.%d.%d\n", i, i/256%256, i%256)
	}
	return []byte(b.String())
}

// benchRecords is the size of the zone BenchmarkImport imports.
const benchRecords = 100_000

// BenchmarkImport imports a zone file of benchRecords records.
func BenchmarkImport(b *testing.B) {
	data := bigZone(benchRecords)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res, err := Import("big.zone", data, Options{Zone: "example.com"})
		if err != nil || len(res.Errors) > 0 {
			b.Fatal(err, res.Errors)
		}
	}
}

// Lines left inside an unclosed '(' are read again only within a bound: a file of nothing
// but '(' is read in about as long as a zone of as many records.
func TestUnclosedParenthesesBounded(t *testing.T) {
	const n = 5_000
	start := time.Now()
	if _, err := Import("big.zone", bigZone(n), Options{Zone: "example.com"}); err != nil {
		t.Fatal(err)
	}
	zone := time.Since(start)
	start = time.Now()
	res, err := Import("parens.zone", []byte(strings.Repeat("a A (\n", n)), Options{Zone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	parens := time.Since(start)
	if len(res.Errors) == 0 || !strings.Contains(res.Errors[len(res.Errors)-1].Message, "too many '('") {
		t.Errorf("the last error is not the one that stops reading: %v", res.Errors[len(res.Errors)-1])
	}
	t.Logf("%d records in %v; %d unclosed '(' in %v", n, zone, n, parens)
	if parens > 20*zone+time.Second {
		t.Errorf("%d unclosed '(' took %v, a zone of as many records %v", n, parens, zone)
	}
}
