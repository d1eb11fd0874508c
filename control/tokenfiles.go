package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TokenSet is what a voter's API accepts as bearer tokens: plain tokens that write or only
// read, and named tokens with scopes, stored hashed. A voter swaps the whole set at once
// (API.SetTokens) when its token files change.
type TokenSet struct {
	// Write are plain tokens that may write and read (named write-token-N by their place).
	Write []string
	// Read are plain tokens that may only read (read-token-N).
	Read []string
	// Named are the named, scoped tokens.
	Named []Token
}

// Empty reports whether the set holds no token at all.
func (ts TokenSet) Empty() bool { return len(ts.Write) == 0 && len(ts.Read) == 0 && len(ts.Named) == 0 }

// SetTokens replaces the tokens the API accepts; requests authenticated from now on use the
// new set, those in flight finish with the old.
func (a *API) SetTokens(ts TokenSet) { a.tokens.Store(&ts) }

// ReadTokenFileLines reads one token per line of path; blank lines and lines starting with #
// are skipped. An empty path holds none.
func ReadTokenFileLines(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("control: tokens: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

// LoadTokenFiles reads a voter's token files as `vigil agent` takes them: writePath (-token-file)
// holds plain tokens that write and named lines "name scope sha256:<hex>"; readPath
// (-read-token-file) plain tokens that only read. Either path may be empty.
func LoadTokenFiles(writePath, readPath string) (TokenSet, error) {
	var ts TokenSet
	lines, err := ReadTokenFileLines(writePath)
	if err != nil {
		return ts, err
	}
	for i, l := range lines {
		if len(strings.Fields(l)) == 1 {
			ts.Write = append(ts.Write, l)
			continue
		}
		t, err := ParseTokenLine(l)
		if err != nil {
			return TokenSet{}, fmt.Errorf("%s: token %d: %w", writePath, i+1, err)
		}
		ts.Named = append(ts.Named, t)
	}
	if ts.Read, err = ReadTokenFileLines(readPath); err != nil {
		return TokenSet{}, err
	}
	for i, t := range ts.Read {
		if len(strings.Fields(t)) != 1 {
			return TokenSet{}, fmt.Errorf("%s: token %d: a read token is one word (named tokens go in the -token-file)", readPath, i+1)
		}
	}
	return ts, nil
}

// TokenReloadConfig configures WatchTokenFiles.
type TokenReloadConfig struct {
	// WritePath and ReadPath are the token files (-token-file, -read-token-file); empty for none.
	WritePath, ReadPath string
	// Apply takes each new set that loaded (API.SetTokens, or a node's).
	Apply func(TokenSet) error
	// Every is how often the files are looked at; default 2s. A change is loaded once the
	// files have looked the same at two looks in a row, so that a file half written is not
	// taken.
	Every time.Duration
	// Logger receives the reloads; nil discards them.
	Logger *slog.Logger
	// Registerer receives vigil_control_token_reloads_total; nil registers none.
	Registerer prometheus.Registerer
}

// fileStamp is what a look at a token file sees of it.
type fileStamp struct {
	mod  time.Time
	size int64
	err  string
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{err: err.Error()}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// WatchTokenFiles reloads the token files when they change, until ctx ends, as certificates
// are (tlsconf): a set that loads is applied and logged; a file that does not parse, is gone
// or holds no token at all is refused, logged with what to fix, and the tokens in use stay.
// Each reload is counted in vigil_control_token_reloads_total{result="loaded"|"refused"}.
func WatchTokenFiles(ctx context.Context, cfg TokenReloadConfig) error {
	if cfg.Apply == nil {
		return errors.New("control: token reload: nothing to apply the tokens to")
	}
	if cfg.Every <= 0 {
		cfg.Every = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_control_token_reloads_total",
		Help: "Reloads of the voter's token files after they changed, by result: loaded, or refused (the tokens in use stay).",
	}, []string{"result"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(reloads); err != nil {
			return fmt.Errorf("control: token reload metrics: %w", err)
		}
	}
	reloads.WithLabelValues("loaded")
	reloads.WithLabelValues("refused")
	look := func() [2]fileStamp { return [2]fileStamp{stampOf(cfg.WritePath), stampOf(cfg.ReadPath)} }
	seen := look() // what the tokens in use were read from
	last := seen
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := look()
		stable := now == last
		last = now
		if now == seen || !stable {
			continue
		}
		seen = now
		ts, err := LoadTokenFiles(cfg.WritePath, cfg.ReadPath)
		if err == nil && ts.Empty() {
			err = errors.New("the token files hold no token")
		}
		if err == nil {
			err = cfg.Apply(ts)
		}
		if err != nil {
			reloads.WithLabelValues("refused").Inc()
			log.Error("control: token files changed but were refused; the tokens in use stay: fix the file (one token a line, or \"name scope sha256:<hex>\" from vigil token create)",
				"token_file", cfg.WritePath, "read_token_file", cfg.ReadPath, "err", err)
			continue
		}
		reloads.WithLabelValues("loaded").Inc()
		log.Info("control: token files reloaded", "token_file", cfg.WritePath, "read_token_file", cfg.ReadPath,
			"write_tokens", len(ts.Write), "read_tokens", len(ts.Read), "named_tokens", len(ts.Named))
	}
}
