package agent

import (
	"context"
	"log/slog"
	"sync"

	"github.com/vigil-dns/vigil/status/notify"
)

// runNotify starts the voter's notification Runner (it acts while the voter leads) and
// returns the function that stops it and waits for it; calling that again does nothing.
func (c *controlRole) runNotify(ctx context.Context, log *slog.Logger) (stop func()) {
	r, err := notify.New(notify.Config{Store: c.node, Client: c.cfg.NotifyClient, Logger: log, Interval: c.cfg.NotifyInterval,
		Source: &notify.Digests{URLs: c.cfg.NotifyLocations, Client: c.cfg.NotifyClient}, Registerer: c.reg})
	if err != nil {
		log.Error("node: control: notifications off", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}
