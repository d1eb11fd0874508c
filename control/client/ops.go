package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vigil-dns/vigil/control/state"
)

// Overrides lists the maintenance overrides (GET /v1/overrides).
func (c *Client) Overrides(ctx context.Context) ([]state.OverrideView, error) {
	var out []state.OverrideView
	_, err := c.read(ctx, "/v1/overrides", nil, &out)
	return out, err
}

// SetOverride sets a maintenance override (POST /v1/overrides): a check forced healthy or
// unhealthy, or a record drained. Its ID is state.OverrideID of its target.
func (c *Client) SetOverride(ctx context.Context, req state.OverrideRequest) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPost, "/v1/overrides", req)
}

// ClearOverride ends the override id (DELETE /v1/overrides/{id}).
func (c *Client) ClearOverride(ctx context.Context, id string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, "/v1/overrides/"+seg(id), nil)
}

// Audit returns a page of the audit log, oldest first (GET /v1/audit): the newest limit
// entries (0: the API's default, 100) before the sequence number before (0: the newest).
func (c *Client) Audit(ctx context.Context, limit int, before uint64) (state.AuditView, error) {
	var out state.AuditView
	_, err := c.read(ctx, "/v1/audit", auditQuery(limit, before), &out)
	return out, err
}

// Refusals returns the requests the answering voter refused (GET /v1/audit/refusals): each
// voter records its own.
func (c *Client) Refusals(ctx context.Context) (state.RefusalsView, error) {
	var out state.RefusalsView
	_, err := c.read(ctx, "/v1/audit/refusals", nil, &out)
	return out, err
}

// Alerts returns the alerts that fire and the notifications waiting (GET /v1/alerts).
func (c *Client) Alerts(ctx context.Context) (state.AlertsView, error) {
	var out state.AlertsView
	_, err := c.read(ctx, "/v1/alerts", nil, &out)
	return out, err
}

// Cluster returns the cluster as the answering voter sees it (GET /v1/cluster).
func (c *Client) Cluster(ctx context.Context) (state.ClusterView, error) {
	var out state.ClusterView
	return out, c.get(ctx, "/v1/cluster", &out)
}

// JoinVoter asks the cluster to add a voter (POST /v1/cluster/voters).
func (c *Client) JoinVoter(ctx context.Context, req state.JoinRequest) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPost, "/v1/cluster/voters", req)
}

// RemoveVoter removes the voter id from the cluster (DELETE /v1/cluster/voters/{id}).
func (c *Client) RemoveVoter(ctx context.Context, id string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, "/v1/cluster/voters/"+seg(id), nil)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// auditQuery is the query of an audit page.
func auditQuery(limit int, before uint64) url.Values {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before > 0 {
		q.Set("before", itoa(before))
	}
	return q
}

// TSIGKeys returns the TSIG keys of transfers the control plane holds (GET /v1/tsig-keys):
// names and algorithms, never a secret.
func (c *Client) TSIGKeys(ctx context.Context) ([]state.TSIGKeyView, error) {
	var out []state.TSIGKeyView
	_, err := c.read(ctx, "/v1/tsig-keys", nil, &out)
	return out, err
}

// PutTSIGKey creates or replaces the TSIG key name (PUT /v1/tsig-keys/{name}); the voter
// seals its secret before it is stored.
func (c *Client) PutTSIGKey(ctx context.Context, name string, req state.TSIGKeyRequest) (state.WriteResult, error) {
	return c.write(ctx, http.MethodPut, "/v1/tsig-keys/"+seg(name), req)
}

// DeleteTSIGKey removes the TSIG key name (DELETE /v1/tsig-keys/{name}).
func (c *Client) DeleteTSIGKey(ctx context.Context, name string) (state.WriteResult, error) {
	return c.write(ctx, http.MethodDelete, "/v1/tsig-keys/"+seg(name), nil)
}
