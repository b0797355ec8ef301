package head

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/storage"
)

// TestInsertRandom applies samples of all three kinds in random order to
// one series, with small chunks and block ranges so that late samples
// split, join and cross them, and checks that the series holds exactly
// the first sample given at each timestamp, in chunks that stay sorted,
// disjoint, within one block range and within the sample limit.
func TestInsertRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const chunkSamples, blockRange = 5, 100
		arena := &chunkArena{}
		m := &chunkMem{samples: chunkSamples, blockRange: blockRange, arena: arena, series: new(cellPool)}
		s := newMemSeries(1)
		want := map[int64]lateSample{}
		for range 300 {
			ts := rng.Int64N(400)
			x := randomSample(rng, ts)
			prev, seen := want[ts]
			if ts < s.maxt {
				// What Append checks a late sample with.
				dup, err := s.checkLate(x)
				wantDup, wantErr := seen && sameSample(prev, x), error(nil)
				if seen && !wantDup {
					wantErr = storage.ErrDuplicateSampleForTimestamp
				}
				if dup != wantDup || !errors.Is(err, wantErr) {
					t.Fatalf("seed %d: checkLate at %d = %v, %v; want %v, %v", seed, ts, dup, err, wantDup, wantErr)
				}
			}
			var (
				ok  bool
				err error
			)
			if x.h == nil && x.fh == nil {
				ok, err = s.applyFloat(x.t, x.v, m)
			} else {
				ok, err = s.applyHistogram(x.t, x.h, x.fh, m)
			}
			switch {
			case !seen:
				if !ok || err != nil {
					t.Fatalf("seed %d: new sample at %d: apply = %v, %v", seed, ts, ok, err)
				}
				want[ts] = x
			case sameSample(prev, x):
				if ok || err != nil {
					t.Fatalf("seed %d: repeated sample at %d: apply = %v, %v", seed, ts, ok, err)
				}
			default:
				if ok || !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
					t.Fatalf("seed %d: other sample at %d: apply = %v, %v", seed, ts, ok, err)
				}
			}
		}
		checkHolds(t, seed, s, want, chunkSamples, blockRange)
		for _, data := range m.retired {
			arena.release(data)
		}
		// Every chunk the series holds is in the arena, once: dropping
		// them all leaves none.
		d := chunkDropper{lo: math.MinInt64, hi: math.MaxInt64, rd: chunkCopier{arena: arena}}
		d.truncate(s)
		for _, data := range d.retired {
			if data != nil {
				arena.release(data)
			}
		}
		if n := arena.liveChunks(); n != 0 {
			t.Fatalf("seed %d: %d chunks left in the arena", seed, n)
		}
		// Nor does the open chunk keep memory, nor the series the chunks
		// re-encoded for late samples put together.
		if _, n := arena.cells.bytes(); n != 0 {
			t.Fatalf("seed %d: %d cells left", seed, n)
		}
	}
}

// TestApplyRunsRandom commits random samples to one series in runs, as
// a commit applies them (applyRuns): the late samples of a run are
// inserted together, and the series ends up holding the first sample
// given at each timestamp, the run counting each sample as sequential
// inserts would.
func TestApplyRunsRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		const chunkSamples, blockRange = 5, 100
		m := testChunkMem(t, chunkSamples)
		m.blockRange = blockRange
		s := newMemSeries(1)
		want := map[int64]lateSample{}
		for range 60 {
			run := make([]lateSample, 1+rng.IntN(12))
			wantOK := 0
			for i := range run {
				ts := rng.Int64N(400)
				run[i] = randomSample(rng, ts)
				if _, seen := want[ts]; !seen {
					want[ts] = run[i]
					wantOK++
				}
			}
			series := slices.Repeat([]*memSeries{s}, len(run))
			ok, _ := applyRuns(series, m, func(i int) lateSample { return run[i] })
			if ok != uint64(wantOK) {
				t.Fatalf("seed %d: a run of %d added %d samples, want %d", seed, len(run), ok, wantOK)
			}
		}
		checkHolds(t, seed, s, want, chunkSamples, blockRange)
	}
}

// randomSample returns a sample at ts of a random kind, of few values,
// so that samples at one time are often the same.
func randomSample(rng *rand.Rand, ts int64) lateSample {
	switch k := rng.IntN(10); {
	case k < 6:
		return lateSample{t: ts, v: float64(rng.IntN(4))}
	case k < 8:
		return lateSample{t: ts, h: testHistogram(rng.IntN(3))}
	}
	return lateSample{t: ts, fh: testHistogram(rng.IntN(3)).ToFloat(nil)}
}

// checkHolds checks that s holds exactly want, by time, in chunks that
// checkChunks accepts.
func checkHolds(t *testing.T, seed uint64, s *memSeries, want map[int64]lateSample, chunkSamples int, blockRange int64) {
	t.Helper()
	got := checkChunks(t, s, chunkSamples, blockRange)
	if len(got) != len(want) {
		t.Fatalf("seed %d: %d samples, want %d", seed, len(got), len(want))
	}
	for _, g := range got {
		if w := want[g.t]; !sameSample(g, w) {
			t.Fatalf("seed %d: sample at %d is %+v, want %+v", seed, g.t, g, w)
		}
	}
}

// checkChunks decodes the series' chunks, checking that they are sorted,
// disjoint, each within one block range and holding at most twice the
// sample limit (histograms: one more chunk when a reset or layout needs
// it), and returns their samples.
func checkChunks(t *testing.T, s *memSeries, limit int, blockRange int64) []lateSample {
	t.Helper()
	metas, _, _ := s.snapshot(nil, math.MinInt64, math.MaxInt64, nil)
	var all []lateSample
	for i, c := range metas {
		samples, err := decodeSamples(nil, c.Data, c.Enc)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if len(samples) == 0 || len(samples) > limit {
			t.Fatalf("chunk %d holds %d samples, limit %d", i, len(samples), limit)
		}
		if samples[0].t != c.MinT || samples[len(samples)-1].t != c.MaxT {
			t.Fatalf("chunk %d spans [%d, %d], its samples [%d, %d]", i, c.MinT, c.MaxT, samples[0].t, samples[len(samples)-1].t)
		}
		if rangeStart(c.MinT, blockRange) != rangeStart(c.MaxT, blockRange) {
			t.Fatalf("chunk %d [%d, %d] spans two block ranges", i, c.MinT, c.MaxT)
		}
		if i > 0 && c.MinT <= metas[i-1].MaxT {
			t.Fatalf("chunk %d starts at %d, before the previous one ends (%d)", i, c.MinT, metas[i-1].MaxT)
		}
		if !slices.IsSortedFunc(samples, func(a, b lateSample) int { return int(a.t - b.t) }) {
			t.Fatalf("chunk %d is not sorted", i)
		}
		all = append(all, samples...)
	}
	return all
}

// openLateHead opens a head in dir taking late samples within window.
func openLateHead(t *testing.T, dir string, window int64, checkpointOnClose bool) *Head {
	t.Helper()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.Stripes = 16
	opts.OutOfOrderWindow = window
	opts.CheckpointOnClose = checkpointOnClose
	h, err := Open(opts)
	if err != nil {
		t.Fatalf("open head: %v", err)
	}
	return h
}

// TestHeadLateWindow appends through the head: samples older than their
// series' newest are taken within the window of the head's newest
// sample, queryable at once, and refused beyond it.
func TestHeadLateWindow(t *testing.T) {
	h := openLateHead(t, t.TempDir(), 1000, true)
	defer h.Close()
	a, b := labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b")
	app := h.Appender(t.Context())
	mustAppend(t, app, a, 10_000, 1)
	mustAppend(t, app, a, 11_000, 2)
	mustAppend(t, app, b, 20_000, 3)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}

	app = h.Appender(t.Context())
	// The head's newest is 20000: a's 19000 is in order; b's 19500 is
	// late and within the window, 18000 is not.
	for _, c := range []struct {
		lset labels.Labels
		t    int64
		err  error
	}{
		{a, 19_000, nil},
		{b, 19_500, nil},
		{b, 18_000, storage.ErrOutOfOrderSample},
		{a, 10_500, storage.ErrOutOfOrderSample},
		{a, 19_200, nil},
		{a, 19_100, nil}, // late against the batch
		{b, 20_000, nil}, // the exact duplicate
	} {
		v := float64(c.t)
		if c.t == 20_000 {
			v = 3
		}
		if _, err := app.Append(0, c.lset, storage.Sample{T: c.t, V: v}); !errors.Is(err, c.err) {
			t.Errorf("append %s at %d: %v, want %v", c.lset, c.t, err, c.err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	// Against what is stored: the duplicate is taken, another value at
	// a late sample's time is refused.
	app = h.Appender(t.Context())
	if _, err := app.Append(0, b, storage.Sample{T: 19_500, V: 19_500}); err != nil {
		t.Errorf("late duplicate: %v", err)
	}
	if _, err := app.Append(0, a, storage.Sample{T: 19_100, V: 1}); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
		t.Errorf("late sample at a stored time: %v, want ErrDuplicateSampleForTimestamp", err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{
		a.String(): {{10_000, 1}, {11_000, 2}, {19_000, 19_000}, {19_100, 19_100}, {19_200, 19_200}},
		b.String(): {{19_500, 19_500}, {20_000, 3}},
	}
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
	if st := h.Stats(); st.SamplesLate != 2 {
		t.Errorf("late samples %d, want 2 (b at 19500, a at 19100)", st.SamplesLate)
	}
}

// TestLateReplay writes series of every kind with their samples shuffled
// within the window, and checks that the head holds them in order, and
// still does when restored from the WAL alone and from a checkpoint.
func TestLateReplay(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			const window = 20 * 15_000
			h := openLateHead(t, dir, window, checkpoint)
			want := writeShuffled(t, h, 400, 15)
			assertSameAny(t, readAny(t, h, all), want)
			if h.Stats().SamplesLate == 0 {
				t.Fatal("no sample was late")
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 3} {
				opts := DefaultOptions()
				opts.WALDir, opts.ReplayWorkers, opts.CheckpointOnClose = dir, workers, false
				// The window does not apply to what was logged.
				h, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				assertSameAny(t, readAny(t, h, all), want)
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// anySeries are a float, an integer histogram, a float histogram and a
// mixed series, whose samples anySampleAt makes.
var anySeries = []labels.Labels{
	labels.FromStrings("__name__", "f"),
	labels.FromStrings("__name__", "h"),
	labels.FromStrings("__name__", "fh"),
	labels.FromStrings("__name__", "mixed"),
}

// anySampleAt returns the ith sample of anySeries[k], at i*15s, as it is
// appended and as it reads back. The mixed series changes kind every 50
// samples.
func anySampleAt(k, i int) (storage.Sample, anySample) {
	ts := int64(i) * 15_000
	kind := k
	if k == 3 {
		kind = (i / 50) % 3
	}
	switch kind {
	case 1:
		hi := testHistogram(i)
		return storage.Sample{T: ts, H: hi}, anySample{t: ts, vt: promchunkenc.ValHistogram, fh: hi.ToFloat(nil)}
	case 2:
		fh := testHistogram(i).ToFloat(nil)
		fh.Sum += 0.25
		return storage.Sample{T: ts, FH: fh}, anySample{t: ts, vt: promchunkenc.ValFloatHistogram, fh: fh.Copy()}
	}
	return storage.Sample{T: ts, V: float64(i)}, anySample{t: ts, vt: promchunkenc.ValFloat, v: float64(i)}
}

// appendAny appends the samples order names of every series of
// anySeries, in commits of 25.
func appendAny(t *testing.T, h *Head, order []int) {
	t.Helper()
	for lo := 0; lo < len(order); lo += 25 {
		app := h.Appender(t.Context())
		for _, i := range order[lo:min(lo+25, len(order))] {
			for k, lset := range anySeries {
				s, _ := anySampleAt(k, i)
				if _, err := app.Append(0, lset, s); err != nil {
					t.Fatalf("append %s at %d: %v", lset, s.T, err)
				}
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// wantAny returns samples 0 to n-1 of every series of anySeries, as they
// read back.
func wantAny(n int) map[string][]anySample {
	want := map[string][]anySample{}
	for k, lset := range anySeries {
		for i := range n {
			_, as := anySampleAt(k, i)
			want[lset.String()] = append(want[lset.String()], as)
		}
	}
	return want
}

// shuffled returns lo to hi-1, each run of spread in random order.
func shuffled(rng *rand.Rand, lo, hi, spread int) []int {
	order := make([]int, 0, hi-lo)
	for ; lo < hi; lo += spread {
		for _, j := range rng.Perm(min(spread, hi-lo)) {
			order = append(order, lo+j)
		}
	}
	return order
}

// writeShuffled appends n samples to each series of anySeries, at a 15 s
// interval, each run of spread samples in random order, in batches of
// 25, and returns them as they should read back.
func writeShuffled(t *testing.T, h *Head, n, spread int) map[string][]anySample {
	t.Helper()
	appendAny(t, h, shuffled(rand.New(rand.NewPCG(1, 2)), 0, n, spread))
	return wantAny(n)
}

// TestLateBelowFloor takes late samples for ranges already written to
// blocks: within the window they are kept in the head until written to
// a block of their own; while their range is being written they are
// refused for a retry; TruncateRange drops only the range it is given.
func TestLateBelowFloor(t *testing.T) {
	for _, window := range []int64{0, 10 * testRange} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions()
			opts.WALDir, opts.Stripes, opts.BlockRange, opts.OutOfOrderWindow = dir, 16, testRange, window
			h, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			a, b := labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b")
			app := h.Appender(t.Context())
			for ts := int64(0); ts < 4*testRange; ts += 100 {
				mustAppend(t, app, a, ts, float64(ts))
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			h.Truncate(2 * testRange)

			appendOne := func(lset labels.Labels, ts int64) error {
				app := h.Appender(t.Context())
				if _, err := app.Append(0, lset, storage.Sample{T: ts, V: float64(ts)}); err != nil {
					app.Rollback()
					return err
				}
				return app.Commit()
			}
			err = appendOne(a, 150)
			if window == 0 {
				if !errors.Is(err, storage.ErrOutOfBounds) {
					t.Fatalf("sample before the floor without a window: %v, want ErrOutOfBounds", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("late sample before the floor: %v", err)
			}
			// b's first sample, in order for b but before the floor.
			if err := appendOne(b, 1050); err != nil {
				t.Fatalf("new series before the floor: %v", err)
			}
			want := map[string][]sample{a.String(): {{150, 150}}, b.String(): {{1050, 1050}}}
			for ts := int64(2 * testRange); ts < 4*testRange; ts += 100 {
				want[a.String()] = append(want[a.String()], sample{ts, float64(ts)})
			}
			assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
			if got := h.MinTime(); got != 150 {
				t.Errorf("head min time %d, want 150", got)
			}

			// While [0, 999] is being written, late samples before its end
			// wait; others do not.
			h.Freeze(0, testRange-1)
			if err := appendOne(a, 120); !errors.Is(err, storage.ErrCompacting) {
				t.Errorf("late sample in the range being written: %v, want ErrCompacting", err)
			}
			if err := appendOne(b, 1100); err != nil {
				t.Errorf("late sample after the range being written: %v", err)
			}
			st := h.TruncateRange(0, testRange-1)
			h.Thaw()
			if st.Chunks != 1 || st.SeriesRemoved != 0 {
				t.Errorf("truncate of [0, %d]: %+v, want one chunk dropped and no series removed", testRange-1, st)
			}
			if got := h.MinTime(); got != 1050 {
				t.Errorf("head min time %d after truncating [0, %d], want 1050", got, testRange-1)
			}
			if err := appendOne(a, 120); err != nil {
				t.Errorf("late sample after the range was written: %v", err)
			}
			want[a.String()][0] = sample{120, 120}
			want[b.String()] = append(want[b.String()], sample{1100, 1100})
			assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
		})
	}
}
