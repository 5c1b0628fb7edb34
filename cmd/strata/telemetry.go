package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	strataMCP "github.com/strata-db/strata/mcp"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
	"github.com/strata-db/strata/transport"
)

// Operating a server (README "Operating Strata"): logs through log/slog (--log-format, --log-level), Prometheus
// metrics on a listener of their own (strata serve --metrics-listen), /healthz and /readyz, and OpenTelemetry traces
// over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The library keeps
// no metrics of its own: it tells what it does through hooks (store.CommitStats, snapshots.Events,
// strataMCP.RequestInfo) and counters read at scrape time (revision.NodeCache.Stats, query.Engine.Stats), and this
// file turns them into Prometheus metrics. Nothing here ever logs or exports a token, a document value or a jq
// program's output.

// logFlags are the flags of the server's log, shared by strata mcp and strata serve.
type logFlags struct {
	format string // text or json; "" is text on a terminal, json otherwise
	level  string
}

func (f *logFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "log-format", "", "log format: text or json (default text on a terminal, json otherwise)")
	cmd.Flags().StringVar(&f.level, "log-level", "info", "least severe log level written: debug, info, warn or error")
}

// newLogger makes the server's logger on stderr (stdout may be the protocol stream), through a logSink (flush it
// before writing to stderr directly, and when the server stops). It also says whether the startup lines are log
// records (json) or plain text.
func newLogger(f *logFlags, stderr io.Writer, terminal func(io.Writer) bool) (*slog.Logger, *logSink, bool, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.level)); err != nil {
		return nil, nil, false, usageErrorf("--log-level %q: use debug, info, warn or error", f.level)
	}
	format := f.format
	if format == "" {
		format = "json"
		if terminal(stderr) {
			format = "text"
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	sink := newLogSink(stderr)
	switch format {
	case "text":
		return slog.New(flushingHandler{slog.NewTextHandler(sink, opts), sink}), sink, false, nil
	case "json":
		return slog.New(flushingHandler{slog.NewJSONHandler(sink, opts), sink}), sink, true, nil
	}
	return nil, nil, false, usageErrorf("--log-format %q: use text or json", f.format)
}

// sdkLogger is the logger given to the go-sdk: it logs every connection and session at info, which over HTTP
// without sessions is several lines per request; only its warnings and errors are kept, unless --log-level debug.
func sdkLogger(logger *slog.Logger) *slog.Logger {
	if logger.Enabled(context.Background(), slog.LevelDebug) {
		return logger
	}
	return slog.New(atLeast{logger.Handler(), slog.LevelWarn})
}

// atLeast is a handler that drops records below a level.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.min}
}
func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}

// say writes one of the lines a server says to the person who started it (serving, stopped): plain text, or with
// --log-format json a log record whose message is the same sentence (so that the whole of stderr is JSON).
func (b *mcpBackend) say(stderr io.Writer, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.requests.Flush() // the request lines logged before it first
	if b.jsonLog {
		// Whatever --log-level says: scripts and people wait for these lines.
		_ = b.logger.Handler().Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0))
		b.logSink.Flush()
		return
	}
	b.logSink.Flush()
	fmt.Fprintln(stderr, msg)
}

// writeRequest writes the request log's line of ri, which ended at t: one line per answered request, at info
// (requestLog queues it). It holds what the request was and how it ended, never its arguments or its answer.
func writeRequest(logger *slog.Logger, t time.Time, ri strataMCP.RequestInfo) {
	attrs := []slog.Attr{slog.String("method", ri.Method)}
	if ri.Tool != "" {
		attrs = append(attrs, slog.String("tool", ri.Tool))
	}
	attrs = append(attrs, slog.String("principal", ri.Principal), slog.Float64("duration_ms", float64(ri.Duration.Microseconds())/1000),
		slog.String("outcome", ri.Outcome))
	if ri.Database != "" {
		attrs = append(attrs, slog.String("database", ri.Database))
	}
	if ri.Revision != 0 {
		attrs = append(attrs, slog.Uint64("revision", ri.Revision))
	}
	r := slog.NewRecord(t, slog.LevelInfo, "request", 0)
	r.AddAttrs(attrs...)
	_ = logger.Handler().Handle(context.Background(), r)
}

// metrics are a server's Prometheus metrics. Names follow Prometheus' conventions (strata_ prefix, base units,
// _total on counters); no label takes an unbounded value: tools and methods are the server's own, outcomes the
// stable codes, databases appear only as the operator's classes (database_classes in --config).
type metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	refused      *prometheus.CounterVec

	commits        *prometheus.CounterVec
	revisions      *prometheus.CounterVec
	nodesWritten   *prometheus.CounterVec
	bytesWritten   *prometheus.CounterVec
	batchSize      prometheus.Histogram
	commitDuration prometheus.Histogram
	failStops      prometheus.Counter
	plansCreated   prometheus.Counter
	plansDecided   *prometheus.CounterVec

	storeCommit  *prometheus.HistogramVec
	boltWrite    prometheus.Histogram
	boltSpill    prometheus.Histogram
	pgRoundTrips prometheus.Histogram

	classOf func(database string) string
}

// latencyBuckets span a point read from the cache (tens of µs) to a query at its deadline (seconds).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics(classOf func(string) string) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), classOf: classOf}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_mcp_requests_total",
		Help: "MCP requests answered, by method and outcome (ok or the error code)."}, []string{"method", "outcome"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_mcp_tool_calls_total",
		Help: "MCP tool calls answered, by tool and outcome (ok or the error code)."}, []string{"tool", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_mcp_tool_call_duration_seconds",
		Help: "Time from a tool call's arrival to its answer, by tool.", Buckets: latencyBuckets}, []string{"tool"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_http_refused_requests_total",
		Help: "HTTP requests refused before reaching a server: reason unauthenticated (no valid token) or rate_limited."}, []string{"reason"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_commits_total",
		Help: "Write transactions of the databases' writers (group commits), by database class and result (ok or error)."}, []string{"class", "result"})
	m.revisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_revisions_total",
		Help: "Revisions committed, by database class."}, []string{"class"})
	m.nodesWritten = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_written_nodes_total",
		Help: "Nodes newly stored by commits, by database class."}, []string{"class"})
	m.bytesWritten = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_written_bytes_total",
		Help: "Bytes of nodes newly stored by commits (compressed, as stored), by database class."}, []string{"class"})
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_commit_batch_writes",
		Help: "Writes committed together in one transaction (group commit).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m.commitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_commit_duration_seconds",
		Help: "Duration of a writer's transaction, from its start to its durable commit.", Buckets: latencyBuckets})
	m.failStops = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_store_fail_stops_total",
		Help: "Commits that failed on an I/O error and stopped their database's storage until it is reopened (fail-stop)."})
	m.plansCreated = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_plans_created_total",
		Help: "Plans made: changes kept for a person's confirmation."})
	m.plansDecided = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_plans_decided_total",
		Help: "Plans decided, by decision: approved, rejected, applied."}, []string{"decision"})
	m.storeCommit = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_store_commit_duration_seconds",
		Help:    "Duration of a storage commit: bbolt's Tx.Commit with its fdatasyncs, or PostgreSQL's COMMIT round trip, by backend.",
		Buckets: latencyBuckets}, []string{"backend"})
	m.boltWrite = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_store_bolt_commit_write_duration_seconds",
		Help: "Part of a bbolt commit spent writing pages and the meta page with their fdatasyncs (Tx.Stats WriteTime).", Buckets: latencyBuckets})
	m.boltSpill = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_store_bolt_commit_spill_duration_seconds",
		Help: "Part of a bbolt commit spent spilling dirty nodes onto pages (Tx.Stats SpillTime).", Buckets: latencyBuckets})
	m.pgRoundTrips = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_store_postgres_round_trip_duration_seconds",
		Help: "Duration of each round trip to PostgreSQL: a query, a batch or a COPY.", Buckets: latencyBuckets})
	m.reg.MustRegister(m.requests, m.toolCalls, m.toolDuration, m.refused, m.commits, m.revisions, m.nodesWritten,
		m.bytesWritten, m.batchSize, m.commitDuration, m.failStops, m.plansCreated, m.plansDecided, m.storeCommit,
		m.boltWrite, m.boltSpill, m.pgRoundTrips,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	v := currentVersion()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_build_info", Help: "The strata build: always 1, with its version.",
		ConstLabels: prometheus.Labels{"version": v.Version, "revision": v.Commit, "goversion": v.Go}})
	build.Set(1)
	m.reg.MustRegister(build)
	// Outcomes seen from the start, so that a rate of errors is 0 rather than absent.
	m.refused.WithLabelValues("unauthenticated")
	m.refused.WithLabelValues("rate_limited")
	return m
}

// request counts an answered request.
func (m *metrics) request(ri strataMCP.RequestInfo) {
	m.requests.WithLabelValues(ri.Method, ri.Outcome).Inc()
	if ri.Method == "tools/call" {
		m.toolCalls.WithLabelValues(ri.Tool, ri.Outcome).Inc()
		m.toolDuration.WithLabelValues(ri.Tool).Observe(ri.Duration.Seconds())
	}
}

func (m *metrics) refusedRequest(decision string) {
	reason := "unauthenticated"
	if decision == audit.DecisionRateLimited {
		reason = "rate_limited"
	}
	m.refused.WithLabelValues(reason).Inc()
}

// events are what the databases tell the metrics.
func (m *metrics) events() snapshots.Events {
	return snapshots.Events{
		Commit: func(e snapshots.CommitEvent) {
			class := m.classOf(e.Database)
			result := "ok"
			if e.Err != nil {
				result = "error"
				if errors.Is(e.Err, store.ErrFailStop) {
					m.failStops.Inc()
				}
			}
			m.commits.WithLabelValues(class, result).Inc()
			m.commitDuration.Observe(e.Duration.Seconds())
			if e.Err == nil {
				m.batchSize.Observe(float64(e.Writes))
				m.revisions.WithLabelValues(class).Add(float64(e.Revisions))
				m.nodesWritten.WithLabelValues(class).Add(float64(e.Nodes))
				m.bytesWritten.WithLabelValues(class).Add(float64(e.Bytes))
			}
		},
		Plan: func(e snapshots.PlanEvent) {
			if e.State == snapshots.PlanPending {
				m.plansCreated.Inc()
			} else {
				m.plansDecided.WithLabelValues(e.State).Inc()
			}
		},
	}
}

func (m *metrics) boltCommit(s store.CommitStats) {
	m.storeCommit.WithLabelValues("bolt").Observe(s.Duration.Seconds())
	m.boltWrite.Observe(s.Write.Seconds())
	m.boltSpill.Observe(s.Spill.Seconds())
}

func (m *metrics) pgCommit(s store.CommitStats) {
	m.storeCommit.WithLabelValues("postgres").Observe(s.Duration.Seconds())
}

// scraped are the metrics read from the server's parts when Prometheus scrapes: caches, the query engine, sessions,
// pending plans, readiness.
type scraped struct {
	nodes    *revision.NodeCache
	engine   *query.Engine
	dir      *snapshots.Dir
	sessions func() int // nil: not an HTTP server
	ready    *readiness
	valueMax int64 // the budget of the engine's cache of values

	cacheHits, cacheMisses, cacheBytes, cacheMax, cacheEntries *prometheus.Desc
	runs, workerStarts, workerKills                            *prometheus.Desc
	sessionsOpen, plansPending, readyDesc                      *prometheus.Desc
}

func newScraped(s *scraped) *scraped {
	s.cacheHits = prometheus.NewDesc("strata_cache_hits_total", "Cache lookups that found their entry, by cache: node (decoded nodes) or value (materialised inputs of jq).", []string{"cache"}, nil)
	s.cacheMisses = prometheus.NewDesc("strata_cache_misses_total", "Cache lookups that did not find their entry, by cache.", []string{"cache"}, nil)
	s.cacheBytes = prometheus.NewDesc("strata_cache_bytes", "Estimated memory the cache's entries take, by cache.", []string{"cache"}, nil)
	s.cacheMax = prometheus.NewDesc("strata_cache_max_bytes", "The cache's budget (--cache-mib), by cache.", []string{"cache"}, nil)
	s.cacheEntries = prometheus.NewDesc("strata_cache_entries", "Entries the cache holds, by cache.", []string{"cache"}, nil)
	s.runs = prometheus.NewDesc("strata_query_runs_total", "jq programs run (queries, transforms, bisect steps), by route: read (a path, no jq), in-process (bounded) or worker.", []string{"route"}, nil)
	s.workerStarts = prometheus.NewDesc("strata_query_worker_starts_total", "Query worker processes started: the first ones and every restart after one ended.", nil, nil)
	s.workerKills = prometheus.NewDesc("strata_query_worker_kills_total", "Query worker processes ended by the engine, by reason: deadline (killed at a query's deadline), canceled (its caller went away), crashed (dead without an answer: memory limit or crash), retired (grown by a query).", []string{"reason"}, nil)
	s.plansPending = prometheus.NewDesc("strata_plans_pending", "Plans waiting for a person's confirmation, in the databases this server has opened.", nil, nil)
	s.readyDesc = prometheus.NewDesc("strata_ready", "1 when the server can take writes (/readyz answers ok), 0 when not: storage unreachable or fail-stopped, audit log failing.", nil, nil)
	s.sessionsOpen = prometheus.NewDesc("strata_mcp_sessions_open", "MCP sessions open over HTTP (protocol revisions with sessions).", nil, nil)
	return s
}

func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.cacheHits, s.cacheMisses, s.cacheBytes, s.cacheMax, s.cacheEntries, s.runs,
		s.workerStarts, s.workerKills, s.plansPending, s.readyDesc} {
		ch <- d
	}
	if s.sessions != nil {
		ch <- s.sessionsOpen
	}
}

func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	nc := s.nodes.Stats()
	counter(s.cacheHits, nc.Hits, "node")
	counter(s.cacheMisses, nc.Misses, "node")
	gauge(s.cacheBytes, float64(nc.Bytes), "node")
	gauge(s.cacheMax, float64(nc.MaxBytes), "node")
	gauge(s.cacheEntries, float64(nc.Entries), "node")
	es := s.engine.Stats()
	counter(s.cacheHits, es.ValueCacheHits, "value")
	counter(s.cacheMisses, es.ValueCacheMisses, "value")
	gauge(s.cacheBytes, float64(es.ValueCacheBytes), "value")
	gauge(s.cacheMax, float64(s.valueMax), "value")
	gauge(s.cacheEntries, float64(es.ValueCacheEntries), "value")
	counter(s.runs, es.Read, query.RouteRead)
	counter(s.runs, es.InProcess, query.RouteInProcess)
	counter(s.runs, es.Worker, query.RouteWorker)
	counter(s.workerStarts, es.WorkersStarted)
	counter(s.workerKills, es.WorkersTimedOut, "deadline")
	counter(s.workerKills, es.WorkersCanceled, "canceled")
	counter(s.workerKills, es.WorkersCrashed, "crashed")
	counter(s.workerKills, es.WorkersRetired, "retired")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if n, err := s.dir.PendingPlans(ctx); err == nil {
		gauge(s.plansPending, float64(n))
	} else {
		ch <- prometheus.NewInvalidMetric(s.plansPending, err)
	}
	ready := 0.0
	if s.ready.check(ctx) == nil {
		ready = 1
	}
	gauge(s.readyDesc, ready)
	if s.sessions != nil {
		gauge(s.sessionsOpen, float64(s.sessions()))
	}
}

// readiness answers /readyz: the gate's Ready, asked at most once a second (the endpoint needs no credentials: a
// flood of probes must not become a flood of checks). A change of state is logged, with its cause.
type readiness struct {
	g      *gate.Gate
	logger *slog.Logger

	mu      sync.Mutex
	checked time.Time
	err     error
	known   bool
}

const readyEvery = time.Second

func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known && time.Since(r.checked) < readyEvery {
		return r.err
	}
	err := r.g.Ready(ctx)
	switch {
	case err != nil && (!r.known || r.err == nil):
		r.logger.Warn("not ready", "cause", err)
	case err == nil && r.known && r.err != nil:
		r.logger.Info("ready again")
	}
	r.err, r.checked, r.known = err, time.Now(), true
	return err
}

// healthHandler serves /healthz (the process serves) and /readyz (it can take writes), without authentication and
// without detail: "ok", or "not ready" with 503. Other paths go to next (nil: 404).
func healthHandler(r *readiness, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/healthz", "/readyz":
		default:
			if next == nil {
				http.NotFound(w, req)
				return
			}
			next.ServeHTTP(w, req)
			return
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if req.URL.Path == "/readyz" && r.check(req.Context()) != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready\n")
			return
		}
		io.WriteString(w, "ok\n")
	})
}

// metricsServer serves /metrics, /healthz and /readyz on the --metrics-listen address (checked with the other flags,
// transport.CheckListen) until ctx ends.
func metricsServer(addr string, tokens bool, reg *prometheus.Registry, ready *readiness, logger *slog.Logger) (*http.Server, net.Listener, error) {
	ln, err := listen("--metrics-listen", addr, tokens)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	return transport.NewHTTPServer(healthHandler(ready, mux), nil, logger), ln, nil
}

// listen listens on addr, which the flag gave and transport.CheckListen has checked; without tokens, a name (such
// as "localhost") that resolved to an address off the loopback interface is refused.
func listen(flag, addr string, tokens bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (%s): %w", addr, flag, err)
	}
	if a := ln.Addr().(*net.TCPAddr); !tokens && !a.IP.IsLoopback() {
		ln.Close()
		return nil, usageErrorf("%s %q resolved to %s, which is not a loopback address", flag, addr, a)
	}
	return ln, nil
}

// tracing starts OpenTelemetry's tracer provider when the environment names an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the exporter reads the other OTEL_EXPORTER_OTLP_*
// variables itself: headers, timeout, TLS), exporting over OTLP/HTTP. Without one nothing is made and nothing is
// exported. shutdown flushes the spans still buffered.
func tracing(ctx context.Context, getenv func(string) string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	// The traces endpoint is used as it is; the general one gets the signal's path (OTLP's exporter
	// configuration).
	name, endpoint := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		name = "OTEL_EXPORTER_OTLP_ENDPOINT"
		if base := getenv(name); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, usageErrorf("%s=%s: use an http:// or https:// URL, such as http://localhost:4318", name, getenv(name))
	}
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		if p != "" && p != "http/protobuf" {
			return nil, nil, usageErrorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: strata exports traces over OTLP/HTTP only (http/protobuf)", p)
		}
	} else if p != "http/protobuf" {
		return nil, nil, usageErrorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%s: strata exports traces over OTLP/HTTP only (http/protobuf)", p)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("strata"), semconv.ServiceVersion(currentVersion().Version)))
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the defaults above.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	// A second bound on what a span may hold (mcp clips what it takes from requests to 512 bytes): a span is queued
	// whole until exported, and the SDK's default attribute length is unlimited.
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = 4096
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits))
	return p, p.Shutdown, nil
}
