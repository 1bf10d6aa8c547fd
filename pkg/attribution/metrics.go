package attribution

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "gitsave_attribution"

var (
	factsRecorded = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "facts_recorded_total",
		Help:           "Admission facts recorded by the webhook, by operation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	factsMatched = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "facts_matched_total",
		Help:           "Facts consumed by a watch event, by operation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	factsExpired = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "facts_expired_total",
		Help: "Facts dropped unconsumed, by reason: ttl (no watch event came in time: " +
			"no-op or failed write, or an unwatched object) or overflow (per-object cap).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	eventsUnattributed = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "unattributed_events_total",
		Help:           "Watch events with no matching fact (given the fallback author), by operation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	factsHeld = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "facts",
		Help:           "Facts currently held, across all Index instances.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the package's metrics with legacyregistry once; NewIndex
// calls it, so a binary that never builds an Index exports nothing.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(factsRecorded, factsMatched, factsExpired, eventsUnattributed, factsHeld)
	})
}
