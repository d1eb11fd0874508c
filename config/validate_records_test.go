package config

import (
	"fmt"
	"strings"
	"testing"
)

// A record set must fit one DNS message with its DNSSEC signatures (two during a key
// rollover): one that fits only without them is refused with its path and the room kept,
// and one a signature's size smaller is accepted.
func TestRecordSetKeepsRoomForSignatures(t *testing.T) {
	const apex, n = "a.test.", 16
	set := func(vlen int) *Zone {
		recs := make([]Record, n)
		for i := range recs {
			recs[i].Value = fmt.Sprintf("%02d", i) + strings.Repeat("x", vlen-2)
		}
		z := DefaultZone()
		z.Name = apex
		z.NameServers = []string{"ns1.example.test."}
		z.RecordSets = []RecordSet{{Name: "@", Type: TypeTXT, Records: recs}}
		return &z
	}
	// 16 records at the apex: per record the owner (8), the header (10), and the value with
	// one length byte per 255 (vlen+16 for vlen up to 4080); the message's header, question
	// and OPT record 12+8+4+11.
	wire := func(vlen int) int { return 35 + n*(8+10+vlen+(vlen+254)/255) }
	unsignedMax := 0
	for v := 100; v <= 4096; v++ {
		if wire(v) <= maxMessage {
			unsignedMax = v
		}
	}
	check := func(id string) bool { return false }
	err := new(Document).ValidateZone(set(unsignedMax), check)
	if err == nil || !strings.Contains(err.Error(), "record_sets[0].records") || !strings.Contains(err.Error(), "for its DNSSEC signatures") {
		t.Fatalf("a set that fits only unsigned (%d bytes): %v", wire(unsignedMax), err)
	}
	room := signatureRoom(apex)
	if err := new(Document).ValidateZone(set(unsignedMax-room/n-1), check); err != nil {
		t.Fatalf("a set with room for its signatures (%d bytes): %v", wire(unsignedMax-room/n-1), err)
	}
}
