package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// minGCHeadroom is the least the heap may grow between collections.
// defaultGOGC's 15% of a large head's heap is tens of MiB or more, but
// of a small one's it is a few: at 10k series about 3 MiB over 10 MiB
// live (at 30%), while a range query over a day allocates 6-8 MiB (its
// series' labels and chunk lists, its answer) and so ran two
// collections, each marking the whole live heap, which took a fifth of
// the query's CPU (docs/benchmarks.md). 16 MiB of headroom is what 15%
// gives a 107 MiB live heap; a larger heap keeps its 15%.
const minGCHeadroom = 16 << 20

// maxGCPercent bounds the percentage a tiny live heap would need.
const maxGCPercent = 1000

// gcPercentFor returns the collector's percentage for a live heap of
// live bytes: percent, or more where percent of live is less than
// headroom.
func gcPercentFor(live, headroom uint64, percent int) int {
	if live == 0 {
		return maxGCPercent
	}
	if p := headroom * 100 / live; p > uint64(percent) {
		return int(min(p, maxGCPercent))
	}
	return percent
}

// gcFloor keeps the collector's headroom at least minGCHeadroom: after
// each collection it sets the percentage gcPercentFor gives for the heap
// then live.
type gcFloor struct {
	percent int // for a large heap
	current int
	live    []metrics.Sample
}

// keepGCHeadroom starts a gcFloor over percent, the percentage set.
func keepGCHeadroom(percent int) {
	f := &gcFloor{percent: percent, current: percent, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.arm()
}

// gcSentinel is what a gcFloor watches for the next collection: it holds
// a pointer so that it is not a tiny allocation, whose cleanups may not
// run.
type gcSentinel struct {
	_ *int
	_ [8]byte
}

// arm has adjust run after the next collection: the sentinel is
// unreachable from the start, so the next collection finds it so and
// runs its cleanup, which arms the next one.
func (f *gcFloor) arm() {
	runtime.AddCleanup(new(gcSentinel), func(f *gcFloor) {
		f.adjust()
		f.arm()
	}, f)
}

func (f *gcFloor) adjust() {
	metrics.Read(f.live)
	if f.live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(f.live[0].Value.Uint64(), minGCHeadroom, f.percent); p != f.current {
		debug.SetGCPercent(p)
		f.current = p
	}
}
