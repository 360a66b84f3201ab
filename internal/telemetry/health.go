package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentchat/agentchat/internal/bus"
)

// Pinger is what can say whether it is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// PingBus checks b when it can be checked (Redis); an in-process bus is
// always up.
func PingBus(ctx context.Context, b bus.Bus) error {
	if p, ok := b.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Health answers readiness: the store and the bus, each on its own, and
// whether the process is draining (shutting down: it finishes what it has
// but a load balancer should send it nothing new).
type Health struct {
	Store Pinger
	Bus   bus.Bus
	// Timeout bounds each check. Default 2s.
	Timeout time.Duration
	// Keys reports the trusted token issuers' key sets, when any.
	Keys func() []KeyCheck

	draining atomic.Bool
}

// Check is one dependency's state.
type Check struct {
	Status string `json:"status"` // up or down
	// Error is a short, public reason; the cause is for the log.
	Error string `json:"error,omitempty"`
	// LatencyMS is how long the check took.
	LatencyMS float64 `json:"latencyMs"`
	err       error
}

// Err is the cause of a failed check (for the log, not for the response).
func (c Check) Err() error { return c.err }

// Report is the readiness answer.
type Report struct {
	// Status is ready, unready (a dependency is down) or draining.
	Status string `json:"status"`
	Store  Check  `json:"store"`
	Bus    Check  `json:"bus"`
	// Keys are the trusted token issuers' key sets: a stale set (its
	// provider unreachable, the last good keys in use) leaves the process
	// ready; a set never fetched makes it unready, as its users cannot
	// sign in.
	Keys []KeyCheck `json:"keys,omitempty"`
}

// KeyCheck is one token issuer's key set.
type KeyCheck struct {
	Issuer string `json:"issuer"`
	Status string `json:"status"` // up, stale or down
	Keys   int    `json:"keys"`
	Error  string `json:"error,omitempty"`
}

// Ready reports whether the process should receive traffic.
func (r Report) Ready() bool { return r.Status == "ready" }

// Drain marks the process as shutting down: readiness fails from now on.
func (h *Health) Drain() { h.draining.Store(true) }

// Draining reports whether Drain was called.
func (h *Health) Draining() bool { return h.draining.Load() }

// Check pings the store and the bus concurrently.
func (h *Health) Check(ctx context.Context) Report {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probe := func(ping func(context.Context) error, what string) Check {
		start := time.Now()
		err := ping(ctx)
		c := Check{Status: "up", LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
		if err != nil {
			c.Status, c.Error, c.err = "down", what+" is not reachable", err
		}
		return c
	}
	var rep Report
	var wg sync.WaitGroup
	wg.Go(func() {
		rep.Store = probe(func(ctx context.Context) error {
			if h.Store == nil {
				return nil
			}
			return h.Store.Ping(ctx)
		}, "the database")
	})
	wg.Go(func() {
		rep.Bus = probe(func(ctx context.Context) error {
			if h.Bus == nil {
				return nil
			}
			return PingBus(ctx, h.Bus)
		}, "the bus")
	})
	wg.Wait()
	keysDown := false
	if h.Keys != nil {
		rep.Keys = h.Keys()
		for _, k := range rep.Keys {
			keysDown = keysDown || k.Status == "down"
		}
	}
	switch {
	case h.Draining():
		rep.Status = "draining"
	case rep.Store.Status != "up" || rep.Bus.Status != "up" || keysDown:
		rep.Status = "unready"
	default:
		rep.Status = "ready"
	}
	return rep
}

// collector exports the checks at scrape time.
func (h *Health) collector() prometheus.Collector { return healthCollector{h} }

type healthCollector struct{ h *Health }

var (
	storeUp  = prometheus.NewDesc("agentchat_store_up", "Whether the store answered a ping at scrape time (1 up, 0 down).", nil, nil)
	busUp    = prometheus.NewDesc("agentchat_bus_up", "Whether the bus answered a ping at scrape time (1 up, 0 down).", nil, nil)
	draining = prometheus.NewDesc("agentchat_draining", "1 while the process is shutting down and reports unready.", nil, nil)
)

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeUp
	ch <- busUp
	ch <- draining
}

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.h.Check(context.Background())
	up := func(s string) float64 {
		if s == "up" {
			return 1
		}
		return 0
	}
	d := 0.0
	if c.h.Draining() {
		d = 1
	}
	ch <- prometheus.MustNewConstMetric(storeUp, prometheus.GaugeValue, up(rep.Store.Status))
	ch <- prometheus.MustNewConstMetric(busUp, prometheus.GaugeValue, up(rep.Bus.Status))
	ch <- prometheus.MustNewConstMetric(draining, prometheus.GaugeValue, d)
}
