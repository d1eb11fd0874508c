package dev

import (
	"context"
	"sync"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
)

// configHolder is the configuration every node of the dev network uses: the control
// plane's latest state, and a channel closed when it changes.
type configHolder struct {
	mu    sync.Mutex
	state *control.State
	ch    chan struct{}
}

func newConfigHolder() *configHolder { return &configHolder{ch: make(chan struct{})} }

// set installs a new state and wakes everyone waiting on changed.
func (h *configHolder) set(s *control.State) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = s
	close(h.ch)
	h.ch = make(chan struct{})
}

// current returns the latest state, nil before the first.
func (h *configHolder) current() *control.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// document returns the latest document, nil before the first state.
func (h *configHolder) document() *config.Document {
	if s := h.current(); s != nil {
		return &s.Document
	}
	return nil
}

// changed returns a channel closed at the next change.
func (h *configHolder) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ch
}

// follow copies every new configuration of the watcher into h until ctx ends.
func (h *configHolder) follow(ctx context.Context, w *control.Watcher) {
	var index uint64
	for {
		ch := w.Changed()
		if s, _ := w.Current(); s != nil && (s.Index != index || h.current() == nil) {
			index = s.Index
			h.set(s)
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
