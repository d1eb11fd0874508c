package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as Go writes durations ("10s", "1m30s") in YAML and
// JSON.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalText writes d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string such as "10s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("invalid duration %s (want e.g. 10s, 1m30s)", shortQuote(string(b)))
	}
	*d = Duration(v)
	return nil
}

// StatusRange is an inclusive range of HTTP status codes, written "200-399" or "204".
type StatusRange struct {
	// Low and High bound the range, both inclusive.
	Low, High int
}

// Contains reports whether code falls in r.
func (r StatusRange) Contains(code int) bool { return code >= r.Low && code <= r.High }

// String writes r as "200-399", or "204" when Low equals High.
func (r StatusRange) String() string {
	if r.Low == r.High {
		return strconv.Itoa(r.Low)
	}
	return strconv.Itoa(r.Low) + "-" + strconv.Itoa(r.High)
}

// MarshalText writes r as its String form.
func (r StatusRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "200-399" or "204". The bounds are checked by Validate.
func (r *StatusRange) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	lo, hi, isRange := strings.Cut(s, "-")
	l, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil {
		return fmt.Errorf("invalid status range %s (want e.g. 200-399 or 204)", shortQuote(s))
	}
	h := l
	if isRange {
		if h, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
			return fmt.Errorf("invalid status range %s (want e.g. 200-399 or 204)", shortQuote(s))
		}
	}
	*r = StatusRange{Low: l, High: h}
	return nil
}
