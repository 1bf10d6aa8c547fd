package stats

import (
	"testing"
	"time"
)

func TestQuantileIsNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 200; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	got := Of(s)
	// Nearest rank: p50 of 1..200 is the 100th value, p99 the 198th.
	if got.N != 200 || got.P50 != 100 || got.P99 != 198 || got.Max != 200 || got.Min != 1 {
		t.Fatalf("Of(1..200 ms) = %+v", got)
	}
	if one := OfFloats([]float64{7}); one.P50 != 7 || one.P99 != 7 {
		t.Fatalf("a single sample is every quantile: %+v", one)
	}
	if empty := Of(nil); empty.N != 0 {
		t.Fatalf("Of(nil) = %+v", empty)
	}
}
