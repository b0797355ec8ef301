package workload

import "math"

// Value returns the k-th sample value of series id. k counts sample
// timestamps from the start of the schedule, not from the series' first
// sample, so it is a function of the timestamp alone.
//
// Counters increase by a varying amount between 1 and 2*inc-1 units a
// sample, inc on average, and never decrease, gauges take a new value in a band each sample,
// and an instance's histogram buckets are cumulative: bucket le=x is the
// share of one request count at or below x. Values are whole numbers of
// units divided by a power of ten, like the values of real exporters, so
// that servers' float compression sees realistic bit patterns.
func Value(seed, id uint64, k int64) float64 {
	t := &catalog[id%uint64(len(catalog))]
	inst := id / uint64(len(catalog))
	h := hash3(seed, saltSample, id, uint64(k))
	switch t.kind {
	case kindCounter:
		base := hash2(seed, saltBase, id) % max(t.span, 1)
		u := base + t.inc*uint64(k) + h%t.inc
		return float64(u) / t.scale
	case kindGauge:
		base := t.base + hash2(seed, saltBase, id)%max(t.span, 1)
		return float64(base+h%max(t.amp, 1)) / t.scale
	case kindConstant:
		base := t.base + hash2(seed, saltBase, id)%max(t.span, 1)
		return float64(base) / t.scale
	case kindBucket:
		return math.Floor(float64(requests(seed, inst, k)) * t.bucket)
	case kindHistSum:
		return float64(requests(seed, inst, k)) * meanLatencyMillis / 1000
	case kindHistCount:
		return float64(requests(seed, inst, k))
	}
	return 0
}

// NoisyValue returns the k-th sample value of series id for ValuesNoisy:
// a value between 0 and 100 of the series' own band, with all 53 bits of
// a float's precision random.
func NoisyValue(seed, id uint64, k int64) float64 {
	base := float64(hash2(seed, saltBase, id) % 90)
	h := hash3(seed, saltSample, id, uint64(k))
	return base + float64(h>>11)/(1<<53)*10
}

// requests is the cumulative request count of instance inst's histogram
// at sample k: between 1 and 200 requests a sample, never decreasing.
func requests(seed, inst uint64, k int64) uint64 {
	rate := 1 + hash2(seed, saltRate, inst)%100
	base := hash2(seed, saltBase, inst) % 1e6
	return base + rate*uint64(k) + hash3(seed, saltRate, inst, uint64(k))%rate
}
