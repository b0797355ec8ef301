// Package stats summarises benchmark measurements: percentiles of
// latencies and medians of repeated rounds.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p percent of
// the values are less than or equal to it. It returns a value that was
// observed, never an interpolation, so a p99 latency is the latency of a
// real request. p <= 0 gives the minimum and p >= 100 the maximum. An empty
// slice gives NaN. sorted must be in ascending order.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	// rank is 1-based. p*n/100 is computed in floating point, where 99.9
	// is not exact: shaving a relative 1e-12 keeps a product that should
	// be a whole number (99.9% of 1000 values is rank 999) from landing
	// just above it and rounding up to the next rank.
	rank := max(int(math.Ceil(p*float64(n)/100*(1-1e-12))), 1)
	return sorted[min(rank, n)-1]
}

// Median returns the median of values (the mean of the two middle values
// for an even count), or NaN for none. values is not modified.
func Median(values []float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Latency summarises request durations.
type Latency struct {
	Count int
	P50   time.Duration
	P99   time.Duration
	Max   time.Duration
	Mean  time.Duration
}

// Summarize sorts durations in place and returns their summary. The zero
// Latency is returned for none.
func Summarize(durations []time.Duration) Latency {
	if len(durations) == 0 {
		return Latency{}
	}
	slices.Sort(durations)
	f := make([]float64, len(durations))
	var sum float64
	for i, d := range durations {
		f[i] = float64(d)
		sum += float64(d)
	}
	return Latency{
		Count: len(durations),
		P50:   time.Duration(Percentile(f, 50)),
		P99:   time.Duration(Percentile(f, 99)),
		Max:   durations[len(durations)-1],
		Mean:  time.Duration(sum / float64(len(durations))),
	}
}
