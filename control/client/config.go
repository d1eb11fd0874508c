package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// The content types of a document PutDocument sends.
const (
	ContentYAML = "application/yaml"
	ContentJSON = "application/json"
)

// PutDocument replaces the whole configuration with a document (PUT /v1/document), YAML or
// JSON as ctype says: the voters apply it atomically, or reject it with every problem
// listed in the *Error's Problems. A document over CompressAbove bytes is sent compressed.
func (c *Client) PutDocument(ctx context.Context, doc []byte, ctype string) (state.WriteResult, error) {
	if doc == nil {
		doc = []byte{}
	}
	r := request{method: http.MethodPut, path: "/v1/document", body: doc, ctype: ctype}
	if len(doc) > CompressAbove {
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		if err != nil {
			return state.WriteResult{}, fmt.Errorf("control client: compress the document: %w", err)
		}
		if _, err := zw.Write(doc); err != nil {
			return state.WriteResult{}, fmt.Errorf("control client: compress the document: %w", err)
		}
		if err := zw.Close(); err != nil {
			return state.WriteResult{}, fmt.Errorf("control client: compress the document: %w", err)
		}
		r.body, r.encoding = b.Bytes(), "gzip"
	}
	return c.writeRaw(ctx, r)
}

// CompressAbove is the size over which PutDocument sends a document gzip-compressed
// (Content-Encoding: gzip): the bytes a voter takes in a request by default (the
// decompressed document may be up to 512 MiB). A voter that predates compressed documents
// refuses a document of this size anyway.
const CompressAbove = 32 << 20

// Document returns the whole configuration as a document (GET /v1/document).
func (c *Client) Document(ctx context.Context) (*config.Document, error) {
	var d config.Document
	if _, err := c.read(ctx, "/v1/document", nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// State returns the replicated state (GET /v1/state) and where it comes from.
func (c *Client) State(ctx context.Context) (*state.State, state.ReadMeta, error) {
	var s state.State
	meta, err := c.read(ctx, "/v1/state", nil, &s)
	if err != nil {
		return nil, meta, err
	}
	return &s, meta, nil
}

// Checks returns every check (GET /v1/checks).
func (c *Client) Checks(ctx context.Context) ([]config.Check, error) {
	var out []config.Check
	_, err := c.read(ctx, "/v1/checks", nil, &out)
	return out, err
}

// Check returns the check id (GET /v1/checks/{id}); a 404 matches ErrNotFound.
func (c *Client) Check(ctx context.Context, id string) (config.Check, error) {
	var out config.Check
	_, err := c.read(ctx, "/v1/checks/"+seg(id), nil, &out)
	return out, err
}

// PutCheck creates or replaces the check id (PUT /v1/checks/{id}). check is anything that
// encodes as a check's JSON: a config.Check, or a map of the fields to set, so that the
// voters fill in their defaults for the others (a zero value is taken as written).
func (c *Client) PutCheck(ctx context.Context, id string, check any) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPut, "/v1/checks/"+seg(id), check)
}

// CreateCheck creates a check that must not exist yet (POST /v1/checks; 409 if it does).
func (c *Client) CreateCheck(ctx context.Context, check any) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPost, "/v1/checks", check)
}

// DeleteCheck deletes the check id (DELETE /v1/checks/{id}); a 404 matches ErrNotFound.
func (c *Client) DeleteCheck(ctx context.Context, id string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, "/v1/checks/"+seg(id), nil)
}

// Zones returns every zone with its name-server shard (GET /v1/zones).
func (c *Client) Zones(ctx context.Context) ([]state.ZoneView, error) {
	var out []state.ZoneView
	_, err := c.read(ctx, "/v1/zones", nil, &out)
	return out, err
}

// Zone returns a zone with its record sets and shard (GET /v1/zones/{zone}).
func (c *Client) Zone(ctx context.Context, zone string) (state.ZoneView, error) {
	var out state.ZoneView
	_, err := c.read(ctx, "/v1/zones/"+seg(zone), nil, &out)
	return out, err
}

// PutZone creates or replaces a zone (PUT /v1/zones/{zone}); zone encodes as a zone's JSON.
func (c *Client) PutZone(ctx context.Context, name string, zone any) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPut, "/v1/zones/"+seg(name), zone)
}

// DeleteZone deletes a zone and its record sets (DELETE /v1/zones/{zone}).
func (c *Client) DeleteZone(ctx context.Context, zone string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, "/v1/zones/"+seg(zone), nil)
}

// recordSetPath is the path of one record set.
func recordSetPath(zone, name, typ string) string {
	return "/v1/zones/" + seg(zone) + "/record_sets/" + seg(name) + "/" + seg(typ)
}

// RecordSets returns the record sets of a zone (GET /v1/zones/{zone}/record_sets) and where
// they come from: with Consistent, the meta says whether the leader confirmed the read.
func (c *Client) RecordSets(ctx context.Context, zone string) ([]config.RecordSet, state.ReadMeta, error) {
	var out []config.RecordSet
	meta, err := c.read(ctx, "/v1/zones/"+seg(zone)+"/record_sets", nil, &out)
	return out, meta, err
}

// RecordSet returns one record set of a zone by owner name and type.
func (c *Client) RecordSet(ctx context.Context, zone, name, typ string) (config.RecordSet, error) {
	var out config.RecordSet
	_, err := c.read(ctx, recordSetPath(zone, name, typ), nil, &out)
	return out, err
}

// PutRecordSet creates or replaces the record set rs.Name rs.Type of a zone.
func (c *Client) PutRecordSet(ctx context.Context, zone string, rs *config.RecordSet) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPut, recordSetPath(zone, rs.Name, string(rs.Type)), rs)
}

// CreateRecordSet creates the record set rs.Name rs.Type of a zone (POST
// /v1/zones/{zone}/record_sets); one that exists already is a 409, which matches ErrConflict.
func (c *Client) CreateRecordSet(ctx context.Context, zone string, rs *config.RecordSet) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPost, "/v1/zones/"+seg(zone)+"/record_sets", rs)
}

// DeleteRecordSet deletes one record set of a zone; a 404 matches ErrNotFound.
func (c *Client) DeleteRecordSet(ctx context.Context, zone, name, typ string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, recordSetPath(zone, name, typ), nil)
}

// DNSSEC returns a signed zone's keys and DS records (GET /v1/zones/{zone}/dnssec).
func (c *Client) DNSSEC(ctx context.Context, zone string) (state.DNSSECView, error) {
	var out state.DNSSECView
	_, err := c.read(ctx, "/v1/zones/"+seg(zone)+"/dnssec", nil, &out)
	return out, err
}

// Rollover starts, or with Finish ends, a rollover of a zone's keys
// (POST /v1/zones/{zone}/dnssec/rollover).
func (c *Client) Rollover(ctx context.Context, zone string, req state.RolloverRequest) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPost, "/v1/zones/"+seg(zone)+"/dnssec/rollover", req)
}
