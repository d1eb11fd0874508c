package externaldns

import (
	"context"
	"errors"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
)

// The provider writes and reads through the control plane's HTTP API with a control/client
// Client: any voter, which forwards writes to the leader; the next voter is asked when one
// does not answer. These are the calls whose form is the provider's own.

// putCheck writes a check, sending only the fields the provider sets so that the control
// plane fills in its defaults for the others (a zero value would be taken as written).
func putCheck(ctx context.Context, ctl *client.Client, ch *config.Check) error {
	body := map[string]any{"id": ch.ID, "protocol": ch.Protocol,
		"target": map[string]any{"host": ch.Target.Host, "port": ch.Target.Port}}
	if ch.Path != "" {
		body["path"] = ch.Path
	}
	_, err := ctl.PutCheck(ctx, ch.ID, body)
	return err
}

// deleteCheck deletes a check; one already gone is not an error.
func deleteCheck(ctx context.Context, ctl *client.Client, id string) error {
	_, err := ctl.DeleteCheck(ctx, id)
	return goneIsDone(err)
}

// deleteRecordSet deletes a record set; one already gone is not an error.
func deleteRecordSet(ctx context.Context, ctl *client.Client, zone, owner, typ string) error {
	_, err := ctl.DeleteRecordSet(ctx, zone, owner, typ)
	return goneIsDone(err)
}

// goneIsDone returns err, or nil for a 404: what a delete was to remove is not there.
func goneIsDone(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return nil
	}
	return err
}
