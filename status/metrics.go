package status

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the status API's own: requests by route and status code, and their duration.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newMetrics registers the API's metrics on reg (none when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_status_requests_total",
			Help: "Requests to the status API, by route pattern and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_status_request_duration_seconds",
			Help:    "Time to answer a request to the status API, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("status: metrics: %w", err)
		}
	}
	return m, nil
}

// instrument counts and times h's requests under the label route (a fixed pattern, never the
// request's path, so the label's values are bounded), and logs server errors.
func (m *metrics) instrument(route string, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &codeRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		took := time.Since(start)
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		m.duration.WithLabelValues(route).Observe(took.Seconds())
		if rec.code >= http.StatusInternalServerError {
			log.Warn("status: request failed", "method", r.Method, "path", r.URL.Path, "code", rec.code, "took", took)
		}
	})
}

// codeRecorder remembers the status code written.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

// WriteHeader records code and writes it.
func (c *codeRecorder) WriteHeader(code int) {
	c.code = code
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (c *codeRecorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }
