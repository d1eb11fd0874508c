package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestProbeKindsNormalized asserts the defaults and canonical forms of http, grpc and dns checks and
// of a CA bundle, as testdata/valid/probe-kinds.yaml writes them.
func TestProbeKindsNormalized(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/probe-kinds.yaml")
	get := func(id string) *Check {
		c, ok := doc.CheckByID(id)
		if !ok {
			t.Fatalf("no check %s", id)
		}
		return c
	}
	if c := get("web"); !c.KeepAlive || c.HTTP2 {
		t.Errorf("web: keep_alive %v, http2 %v; want keep_alive alone", c.KeepAlive, c.HTTP2)
	}
	if c := get("internal-api"); c.KeepAlive || c.HTTP2 {
		t.Errorf("internal-api: keep_alive %v, http2 %v; want neither, the default", c.KeepAlive, c.HTTP2)
	}
	if c := get("internal-api"); !strings.HasPrefix(c.TLSCA, "-----BEGIN CERTIFICATE-----") || !c.TLSVerify {
		t.Errorf("internal-api: tls_ca %.40q, tls_verify %v", c.TLSCA, c.TLSVerify)
	}
	if c := get("orders-grpc"); c.GRPC == nil || c.GRPC.Service != "orders.v1.Orders" || c.GRPC.TLS || c.Target.Port != 50051 {
		t.Errorf("orders-grpc: %+v %+v", c.Target, c.GRPC)
	}
	if c := get("whole-grpc-server"); c.GRPC == nil || c.GRPC.Service != "" || !c.GRPC.TLS || c.SNI != "grpc.example.com" {
		t.Errorf("whole-grpc-server: %+v, sni %q", c.GRPC, c.SNI)
	}
	tests := map[string]DNSProbe{
		"ns1":      {Name: "www.example.com.", Type: TypeA, Rcode: "NOERROR", Answer: "192.0.2.1", Transport: "udp"},
		"resolver": {Name: "nonexistent.example.com.", Type: TypeA, Rcode: "NXDOMAIN", Recursion: true, Transport: "tcp"},
		"soa":      {Name: "example.com.", Type: TypeSOA, Rcode: "NOERROR", Transport: "udp"},
	}
	for id, want := range tests {
		c := get(id)
		if c.DNS == nil || *c.DNS != want {
			t.Errorf("%s: dns %+v, want %+v", id, c.DNS, want)
		}
	}
	if c := get("ns1"); c.Target.Port != 53 {
		t.Errorf("a dns check's port defaults to 53, got %d", c.Target.Port)
	}
	if c := get("soa"); c.Target.Port != 5353 {
		t.Errorf("soa: port %d", c.Target.Port)
	}

	// The control plane stores documents as JSON: the new fields survive the trip.
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("JSON of a valid document: %v", err)
	}
	if !reflect.DeepEqual(back.Checks, doc.Checks) {
		t.Errorf("checks changed through JSON:\n%+v\n%+v", back.Checks, doc.Checks)
	}
}
