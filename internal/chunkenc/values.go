package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/value"
)

// Values are the float values of a series' samples, for a reader that
// needs few of them (a selector's value at each step of a query, the
// first and last sample of each window of a rate): the values of a
// decimal chunk may be kept as the chunk stores them, integer mantissas,
// and made floats by At, one at a time (see SeriesIterator.AppendValues).
// They are held in runs of values stored alike. A Values is reused
// through Reset; it is not safe for concurrent use.
type Values struct {
	// vs holds a run's floats, or its mantissas m, each as
	// math.Float64frombits(uint64(m)), of the values float64(m)/div.
	vs   []float64
	runs []valueRun
	// The values from lo to hi are stored with divisor div: the run At
	// found last, or none (lo == hi).
	lo, hi int
	div    float64
}

// valueRun says how the values from start to the next run's start are
// stored: as floats if div is 0, else as mantissas to divide by div; and
// whether they are known to rise, each at least the one before (a
// counter's between resets; then none is a staleness marker).
type valueRun struct {
	start  int
	div    float64
	rising bool
}

// markerFree reports whether the run can hold no staleness marker: its
// values are mantissas, or rise.
func (r valueRun) markerFree() bool { return r.div != 0 || r.rising }

// Reset empties v, keeping its memory.
func (v *Values) Reset() { *v = Values{vs: v.vs[:0], runs: v.runs[:0]} }

// At returns the i'th value: float64(m)/div for a mantissa, as the
// chunk's iterator computes it, so the same float to the bit.
func (v *Values) At(i int) float64 {
	if uint(i-v.lo) >= uint(v.hi-v.lo) {
		v.find(i)
	}
	if v.div == 0 {
		return v.vs[i]
	}
	return float64(int64(math.Float64bits(v.vs[i]))) / v.div
}

// Floats returns the values if all are stored as floats (as
// AppendValues stores them for a reader of every value), the slice v
// holds; otherwise ok is false.
func (v *Values) Floats() (vs []float64, ok bool) {
	for _, r := range v.runs {
		if r.div != 0 {
			return nil, false
		}
	}
	return v.vs, true
}

// Append appends a float value.
func (v *Values) Append(x float64) {
	v.vs = append(v.vs, x)
	v.mark(valueRun{start: len(v.vs) - 1})
}

// mark records how the values from run.start on, the last ones and at
// least one, are stored.
func (v *Values) mark(run valueRun) {
	v.lo, v.hi = 0, 0
	v.runs = v.extend(v.runs, run)
}

// extend appends run to runs, the runs of the values before run.start,
// unless the last of them continues into it: stored alike, and if
// rising, rising from one to the other.
func (v *Values) extend(runs []valueRun, run valueRun) []valueRun {
	if n := len(runs); n > 0 {
		last, i := runs[n-1], run.start
		if last.div == run.div && last.rising == run.rising && (!run.rising || !v.lower(i, i-1, run.div)) {
			return runs
		}
	}
	return append(runs, run)
}

// lower reports whether value i is lower than value j, both stored with
// divisor div: mantissas are in the order of their values.
func (v *Values) lower(i, j int, div float64) bool {
	if div == 0 {
		return v.vs[i] < v.vs[j]
	}
	return int64(math.Float64bits(v.vs[i])) < int64(math.Float64bits(v.vs[j]))
}

// find makes the run of value i the one At reads first.
func (v *Values) find(i int) {
	// The last run starting at or before i.
	lo, hi := 0, len(v.runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.runs[m].start <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := max(lo-1, 0)
	v.lo, v.hi, v.div = v.runs[k].start, v.end(k), v.runs[k].div
}

// end returns where run k ends.
func (v *Values) end(k int) int {
	if k+1 < len(v.runs) {
		return v.runs[k+1].start
	}
	return len(v.vs)
}

// DropStale removes the staleness markers from v and their timestamps
// from ts, which holds a timestamp for each value, and appends to
// descents the indices of the values then lower than the one before
// them, in order. Markers are floats: a decimal chunk holding one stores
// floats. Within a run of mantissas it compares them: the values are in
// the same order; within a rising run, none.
func (v *Values) DropStale(ts []int64, descents []int) ([]int64, []int) {
	n0 := len(descents)
	// Markers are rare: one pass finds the descents, unless it meets one.
	descents, ok := v.appendDescents(descents)
	if ok {
		return ts, descents
	}
	k, runs := 0, v.runs[:0]
	for r, run := range v.runs {
		end := v.end(r)
		start := k
		if run.markerFree() {
			if k != run.start {
				copy(ts[k:], ts[run.start:end])
				copy(v.vs[k:], v.vs[run.start:end])
			}
			k += end - run.start
		} else {
			for i := run.start; i < end; i++ {
				if x := v.vs[i]; !value.IsStaleNaN(x) {
					ts[k], v.vs[k] = ts[i], x
					k++
				}
			}
		}
		if k == start {
			continue // all markers
		}
		run.start = start
		runs = v.extend(runs, run)
	}
	v.vs, v.runs, v.lo, v.hi = v.vs[:k], runs, 0, 0
	descents, _ = v.appendDescents(descents[:n0])
	return ts[:k], descents
}

// appendDescents appends to dst the indices of the values lower than the
// one before them, in order, and returns it; or stops at the first
// staleness marker and returns ok false.
func (v *Values) appendDescents(dst []int) (_ []int, ok bool) {
	for r, run := range v.runs {
		end := v.end(r)
		vs := v.vs[run.start:end]
		if len(vs) == 0 {
			continue
		}
		if run.markerFree() {
			if r > 0 && v.At(run.start) < v.At(run.start-1) {
				dst = append(dst, run.start)
			}
			if run.rising {
				continue
			}
			// Mantissas, in the order of their values.
			for i := 1; i < len(vs); i++ {
				if int64(math.Float64bits(vs[i])) < int64(math.Float64bits(vs[i-1])) {
					dst = append(dst, run.start+i)
				}
			}
			continue
		}
		if value.IsStaleNaN(vs[0]) {
			return dst, false
		}
		if r > 0 && vs[0] < v.At(run.start-1) {
			dst = append(dst, run.start)
		}
		for i := 1; i < len(vs); i++ {
			// A marker, a NaN, is lower than nothing.
			if x := vs[i]; x < vs[i-1] {
				dst = append(dst, run.start+i)
			} else if math.Float64bits(x) == value.StaleNaN {
				return dst, false
			}
		}
	}
	return dst, true
}
