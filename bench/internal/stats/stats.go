// Package stats summarises latency samples: medians and tail percentiles,
// never a single run.
package stats

import (
	"math"
	"sort"
	"time"
)

// Summary describes a set of duration samples, in milliseconds so it reads
// well in JSON and in the report.
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"minMs"`
	P50  float64 `json:"p50Ms"`
	P90  float64 `json:"p90Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
	Mean float64 `json:"meanMs"`
}

// Of summarises samples (the slice is sorted in place).
func Of(samples []time.Duration) Summary {
	ms := make([]float64, len(samples))
	for i, d := range samples {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	return OfFloats(ms)
}

// OfFloats summarises samples that are already in milliseconds.
func OfFloats(ms []float64) Summary {
	if len(ms) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return Summary{
		N:    len(s),
		Min:  s[0],
		P50:  Quantile(s, 0.50),
		P90:  Quantile(s, 0.90),
		P99:  Quantile(s, 0.99),
		Max:  s[len(s)-1],
		Mean: sum / float64(len(s)),
	}
}

// Quantile of sorted values, nearest-rank (the value of an actual sample, so
// p99 of 200 samples is the 198th: no interpolation makes a tail look better).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median of values (not necessarily sorted).
func Median(values []float64) float64 {
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	return Quantile(s, 0.5)
}

// Ratio is a/b, or NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
