// Package metrics is Parley's Prometheus instrumentation (GET /metrics),
// built on the official client library: HTTP requests per route, turns,
// the turn queue, the chat pipeline's commits, SSE streams and the database
// pool. app.start creates one Metrics, wraps the HTTP handler and the
// store's Committer with it, passes it to the turn dispatcher as its
// TurnObserver and registers the gauges it reads.
package metrics

import (
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
)

// Metrics holds Parley's collectors in a registry of its own.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	turns        *prometheus.CounterVec
	turnDuration prometheus.Histogram
	turnWait     prometheus.Histogram
	commits      *prometheus.CounterVec
	commitWait   prometheus.Histogram
	messages     *prometheus.CounterVec
}

// waitBuckets are those of the chat pipeline's waits, from 100 µs.
var waitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the metrics of one server, with the Go runtime's and the
// process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_requests_total",
			Help: "HTTP requests served, by route (the ServeMux pattern that matched), method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route (SSE streams count until they end).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_turns_total",
			Help: "Bot turns run to their end, by outcome (ok or failed).",
		}, []string{"outcome"}),
		turnDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_turn_duration_seconds",
			Help:    "Time to run one bot turn.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		turnWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_turn_wait_seconds",
			Help:    "Time a conversation with turns to run waited for a turn worker.",
			Buckets: waitBuckets,
		}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_commits_total",
			Help: "Writes of the chat pipeline (messages, events, turns' completions) committed or failed, by outcome.",
		}, []string{"outcome"}),
		commitWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_commit_duration_seconds",
			Help:    "Time from a chat pipeline write's submission to its outcome: the wait for its group commit, then the commit.",
			Buckets: waitBuckets,
		}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_user_messages_total",
			Help: "Users' messages with a bot turn, by how they committed: folded (with the bot's answer, in one commit), " +
				"or why alone (off, full, busy, lease, not_idle, slow, outside, retry, refused).",
		}, []string{"commit"}),
	}
	m.messages.WithLabelValues("folded")
	m.turns.WithLabelValues("ok")
	m.turns.WithLabelValues("failed")
	m.commits.WithLabelValues("ok")
	m.commits.WithLabelValues("failed")
	m.reg.MustRegister(m.requests, m.latency, m.turns, m.turnDuration, m.turnWait, m.commits, m.commitWait, m.messages,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gauge registers a gauge read from fn at each scrape.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// CounterFunc registers a counter read from fn at each scrape.
func (m *Metrics) CounterFunc(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// DBStats registers the database pool's statistics (parley_db_*), read
// from stats (database/sql's DBStats) at each scrape.
func (m *Metrics) DBStats(stats func() sql.DBStats) {
	gauge := func(name, help string, v func(sql.DBStats) float64) {
		m.Gauge(name, help, func() float64 { return v(stats()) })
	}
	counter := func(name, help string, v func(sql.DBStats) float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return v(stats()) }))
	}
	gauge("parley_db_max_open_connections", "Maximum number of open connections to the database.", func(s sql.DBStats) float64 { return float64(s.MaxOpenConnections) })
	gauge("parley_db_open_connections", "Established connections, in use and idle.", func(s sql.DBStats) float64 { return float64(s.OpenConnections) })
	gauge("parley_db_in_use_connections", "Connections in use.", func(s sql.DBStats) float64 { return float64(s.InUse) })
	gauge("parley_db_idle_connections", "Idle connections.", func(s sql.DBStats) float64 { return float64(s.Idle) })
	counter("parley_db_wait_count_total", "Connections waited for.", func(s sql.DBStats) float64 { return float64(s.WaitCount) })
	counter("parley_db_wait_duration_seconds_total", "Time blocked waiting for a connection.", func(s sql.DBStats) float64 { return s.WaitDuration.Seconds() })
	counter("parley_db_max_idle_closed_total", "Connections closed because of SetMaxIdleConns.", func(s sql.DBStats) float64 { return float64(s.MaxIdleClosed) })
	counter("parley_db_max_idle_time_closed_total", "Connections closed because of SetConnMaxIdleTime.", func(s sql.DBStats) float64 { return float64(s.MaxIdleTimeClosed) })
	counter("parley_db_max_lifetime_closed_total", "Connections closed because of SetConnMaxLifetime.", func(s sql.DBStats) float64 { return float64(s.MaxLifetimeClosed) })
}

// TurnRan implements turns.TurnObserver.
func (m *Metrics) TurnRan(d time.Duration, failed bool) {
	m.turns.WithLabelValues(outcome(failed)).Inc()
	m.turnDuration.Observe(d.Seconds())
}

// outcome is the label of a turn's or a write's outcome.
func outcome(failed bool) string {
	if failed {
		return "failed"
	}
	return "ok"
}

// RunWaited implements turns.TurnObserver.
func (m *Metrics) RunWaited(d time.Duration) { m.turnWait.Observe(d.Seconds()) }

// MessageStored implements turns.TurnObserver.
func (m *Metrics) MessageStored(alone string) {
	if alone == "" {
		alone = "folded"
	}
	m.messages.WithLabelValues(alone).Inc()
}

// CommitDone counts a chat pipeline write and times its wait for the
// commit (app wraps the store's Committer with it).
func (m *Metrics) CommitDone(d time.Duration, failed bool) {
	m.commits.WithLabelValues(outcome(failed)).Inc()
	m.commitWait.Observe(d.Seconds())
}

// Instrument counts and times every request by the pattern of the route
// that served it (httpx.Mux reports it; "unmatched" when none did), so the
// label set stays bounded whatever paths clients send.
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, route := httpx.WithRouteRecorder(r.Context())
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			pattern := route.Pattern
			if pattern == "" {
				pattern = "unmatched"
			}
			method := methodLabel(r.Method)
			code := sw.status
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(pattern, method, strconv.Itoa(code)).Inc()
			m.latency.WithLabelValues(pattern, method).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// statusWriter remembers the status; Unwrap lets http.ResponseController
// reach Flush and deadlines of the real writer (SSE).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
