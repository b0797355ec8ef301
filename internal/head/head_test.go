package head

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

func openTestHead(t *testing.T, dir string) *Head {
	t.Helper()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.Stripes = 16
	h, err := Open(opts)
	if err != nil {
		t.Fatalf("open head: %v", err)
	}
	return h
}

type sample struct {
	t int64
	v float64
}

// readAll returns every series matching ms in [mint, maxt], keyed by labels.
func readAll(t *testing.T, q promstorage.Queryable, mint, maxt int64, ms ...*labels.Matcher) map[string][]sample {
	t.Helper()
	qr, err := q.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	out := map[string][]sample{}
	ss := qr.Select(context.Background(), true, nil, ms...)
	var it promchunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var got []sample
		for it.Next() == promchunkenc.ValFloat {
			ts, v := it.At()
			got = append(got, sample{ts, v})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[s.Labels().String()] = got
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sampleOf(t int64, v float64) storage.Sample { return storage.Sample{T: t, V: v} }

func mustAppend(t *testing.T, app storage.Appender, lset labels.Labels, ts int64, v float64) {
	t.Helper()
	if _, err := app.Append(0, lset, storage.Sample{T: ts, V: v}); err != nil {
		t.Fatalf("append %s %d: %v", lset, ts, err)
	}
}

// reopen closes h and opens the head again with opts, to be closed when
// the test ends.
func reopen(t *testing.T, h *Head, opts Options) *Head {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

var all = labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")

func TestAppendAndQuery(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()

	// 300 samples per series cross two chunk boundaries.
	want := map[string][]sample{}
	app := h.Appender(context.Background())
	for i := range 3 {
		lset := labels.FromStrings("__name__", "up", "instance", fmt.Sprint(i))
		for j := range 300 {
			ts, v := int64(j*15000), float64(i*1000+j)
			mustAppend(t, app, lset, ts, v)
			want[lset.String()] = append(want[lset.String()], sample{ts, v})
		}
	}
	if got := readAll(t, h, math.MinInt64, math.MaxInt64, all); len(got) != 0 {
		t.Fatalf("uncommitted samples visible: %v", got)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, h, math.MinInt64, math.MaxInt64, all)
	assertEqual(t, got, want)

	// A time range keeps to its bounds, inclusive.
	got = readAll(t, h, 15000*100, 15000*200, labels.MustNewMatcher(labels.MatchEqual, "instance", "1"))
	l := labels.FromStrings("__name__", "up", "instance", "1").String()
	if n := len(got[l]); n != 101 {
		t.Fatalf("got %d samples in range, want 101", n)
	}
	if got[l][0].t != 15000*100 || got[l][100].t != 15000*200 {
		t.Fatalf("range bounds wrong: first %d last %d", got[l][0].t, got[l][100].t)
	}
	if st := h.Stats(); st.Series != 3 || st.SamplesAppended != 900 {
		t.Fatalf("stats %+v", st)
	}
}

func assertEqual(t *testing.T, got, want map[string][]sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("series %s: got %d samples, want %d", k, len(g), len(w))
		}
		for i := range w {
			if g[i].t != w[i].t || math.Float64bits(g[i].v) != math.Float64bits(w[i].v) {
				t.Fatalf("series %s sample %d: got %v, want %v", k, i, g[i], w[i])
			}
		}
	}
}

func TestAppendRejects(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "m")

	app := h.Appender(context.Background())
	mustAppend(t, app, lset, 100, 1)
	mustAppend(t, app, lset, 100, 1) // exact duplicate in the batch: accepted, dropped
	if _, err := app.Append(0, lset, storage.Sample{T: 100, V: 2}); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
		t.Fatalf("same timestamp, new value in batch: got %v", err)
	}
	if _, err := app.Append(0, lset, storage.Sample{T: 50, V: 2}); !errors.Is(err, storage.ErrOutOfOrderSample) {
		t.Fatalf("older sample in batch: got %v", err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}

	app = h.Appender(context.Background())
	cases := []struct {
		name string
		lset labels.Labels
		t    int64
		v    float64
		want error
	}{
		{"older than committed", lset, 99, 1, storage.ErrOutOfOrderSample},
		{"same timestamp other value", lset, 100, 3, storage.ErrDuplicateSampleForTimestamp},
		{"stale NaN after value", lset, 100, math.Float64frombits(value.StaleNaN), storage.ErrDuplicateSampleForTimestamp},
		{"exact duplicate", lset, 100, 1, nil},
		{"no metric name", labels.FromStrings("job", "x"), 1, 1, storage.ErrInvalidLabels},
		{"empty label name", labels.FromStrings("__name__", "m", "", "x"), 1, 1, storage.ErrInvalidLabels},
		{"duplicate label name", labels.New(labels.Label{Name: "__name__", Value: "m"}, labels.Label{Name: "a", Value: "1"}, labels.Label{Name: "a", Value: "2"}), 1, 1, storage.ErrInvalidLabels},
		{"invalid UTF-8", labels.FromStrings("__name__", "m", "a", "\xff"), 1, 1, storage.ErrInvalidLabels},
		{"old timestamp on new series", labels.FromStrings("__name__", "old"), -1000, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := app.Append(0, c.lset, storage.Sample{T: c.t, V: c.v})
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, h, math.MinInt64, math.MaxInt64, all)
	want := map[string][]sample{
		lset.String(): {{100, 1}},
		labels.FromStrings("__name__", "old").String(): {{-1000, 1}},
	}
	assertEqual(t, got, want)
	if h.Stats().Series != 2 {
		t.Fatalf("invalid series were created: %d series", h.Stats().Series)
	}
}

func TestRollbackDiscards(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	app := h.Appender(context.Background())
	mustAppend(t, app, labels.FromStrings("__name__", "m"), 1, 1)
	if err := app.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h, math.MinInt64, math.MaxInt64, all); len(got) != 0 {
		t.Fatalf("rolled back samples visible: %v", got)
	}
}

// TestReplayEquivalence checks that the state after reopening equals the
// state before, including series created in a batch that was rolled back
// and written to later.
func TestReplayEquivalence(t *testing.T) {
	dir := t.TempDir()
	h := openTestHead(t, dir)
	rolledBack := labels.FromStrings("__name__", "rb")
	app := h.Appender(context.Background())
	mustAppend(t, app, rolledBack, 1, 1)
	app.Rollback()

	for batch := range 5 {
		app := h.Appender(context.Background())
		for i := range 50 {
			lset := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i%17), "j", fmt.Sprint(i))
			for k := range 40 {
				mustAppend(t, app, lset, int64(batch*40+k)*1000, float64(batch*i*k))
			}
		}
		mustAppend(t, app, rolledBack, int64(batch+10), math.NaN())
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	before := readAll(t, h, math.MinInt64, math.MaxInt64, all)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := openTestHead(t, dir)
	defer h2.Close()
	after := readAll(t, h2, math.MinInt64, math.MaxInt64, all)
	assertEqual(t, after, before)
	if len(after) != 51 {
		t.Fatalf("got %d series after replay, want 51", len(after))
	}

	// New series after replay get refs that do not clash with replayed ones.
	app = h2.Appender(context.Background())
	mustAppend(t, app, labels.FromStrings("__name__", "new"), 1, 1)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h2, math.MinInt64, math.MaxInt64, all); len(got) != 52 {
		t.Fatalf("got %d series, want 52", len(got))
	}
}

func TestAppendByRef(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "m")
	app := h.Appender(context.Background())
	ref, err := app.Append(0, lset, storage.Sample{T: 1, V: 1})
	if err != nil || ref == 0 {
		t.Fatalf("append: ref %d, err %v", ref, err)
	}
	ref2, err := app.Append(ref, lset, storage.Sample{T: 2, V: 2})
	if err != nil || ref2 != ref {
		t.Fatalf("append by ref: ref %d, err %v", ref2, err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	assertEqual(t, readAll(t, h, 0, 10, all), map[string][]sample{lset.String(): {{1, 1}, {2, 2}}})
}

func TestMaxSeries(t *testing.T) {
	opts := DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.MaxSeries = 2
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	app := h.Appender(context.Background())
	mustAppend(t, app, labels.FromStrings("__name__", "a"), 1, 1)
	mustAppend(t, app, labels.FromStrings("__name__", "b"), 1, 1)
	if _, err := app.Append(0, labels.FromStrings("__name__", "c"), sampleOf(1, 1)); !errors.Is(err, storage.ErrSeriesLimit) {
		t.Fatalf("third series: got %v, want ErrSeriesLimit", err)
	}
	// Existing series still take samples.
	mustAppend(t, app, labels.FromStrings("__name__", "a"), 2, 2)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := h.Stats().Series; n != 2 {
		t.Fatalf("%d series", n)
	}
}

// TestSeriesSize checks the size a series takes in its cell (see
// stripeSeries.getOrSet): at a million series each 8 bytes more is 8 MB.
func TestSeriesSize(t *testing.T) {
	if got := unsafe.Sizeof(memSeries{}); got > 104 {
		t.Errorf("a series is %d bytes, want at most 104", got)
	}
	if got := unsafe.Sizeof(chunkenc.XORAppender{}); got > 32 {
		t.Errorf("an open XOR chunk is %d bytes, want at most 32", got)
	}
}

// TestSeriesCellsFull leaves the pool of label ids, then that of the
// series, without a span number or a span with room, as at some 300
// million series, and checks that a new series is then refused with
// storage.ErrSeriesLimit, leaving no cell or label pair behind, while
// the series there are take samples.
func TestSeriesCellsFull(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	old := labels.FromStrings("__name__", "old")
	app := h.Appender(context.Background())
	mustAppend(t, app, old, 1, 1)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	for i, p := range []*cellPool{&h.series.symbols.cells, &h.series.cells} {
		fillNumbers(p)
		_, seriesCells := h.series.cells.bytes()
		_, idCells := h.series.symbols.cells.bytes()
		pairs := h.series.symbols.len()
		app := h.Appender(context.Background())
		_, err := app.Append(0, labels.FromStrings("__name__", "new", "job", "j", "pod", "p"), storage.Sample{T: 2, V: 2})
		if !errors.Is(err, storage.ErrSeriesLimit) {
			t.Errorf("pool %d full: a new series appended with error %v, want %v", i, err, storage.ErrSeriesLimit)
		}
		mustAppend(t, app, old, int64(2+i), 2)
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		_, seriesAfter := h.series.cells.bytes()
		_, idsAfter := h.series.symbols.cells.bytes()
		if seriesAfter != seriesCells || idsAfter != idCells || h.series.symbols.len() != pairs {
			t.Errorf("pool %d full: %d series cells, %d id cells and %d pairs after the refusal, want %d, %d and %d",
				i, seriesAfter, idsAfter, h.series.symbols.len(), seriesCells, idCells, pairs)
		}
	}
	if got := readAll(t, h, 0, 10, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")); len(got) != 1 || len(got[old.String()]) != 3 {
		t.Errorf("read %v, want old's 3 samples only", got)
	}
}

// fillNumbers leaves the numbered pool p without a span number to give
// and without a span with room, as if it held maxSpanNumber full spans.
// Spans that have room again once a cell is freed take cells again.
func fillNumbers(p *cellPool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	full := make([]unsafe.Pointer, maxSpanNumber+1)
	copy(full, *p.bases.Load())
	p.bases.Store(&full)
	p.freeNumbers = nil
	for i := range p.partial {
		for _, sp := range p.partial[i] {
			sp.partial = false
		}
		p.partial[i] = nil
	}
}

// TestAppenderBuffersBounded checks that an appender back in the pool
// keeps the buffers its batches need, also a steady stream of large
// ones, but lets go of those a rare large batch grew.
func TestAppenderBuffersBounded(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	batch := func(first, n int, ts int64) {
		app := h.Appender(context.Background())
		for i := first; i < first+n; i++ {
			mustAppend(t, app, labels.FromStrings("__name__", "m", "id", strconv.Itoa(i), "pod", strings.Repeat("p", 40)), ts, 1)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// kept returns the bytes of the pooled appender's buffers that a
	// batch of new series fills most.
	kept := func() map[string]int {
		a := h.Appender(context.Background()).(*appender)
		defer a.Rollback()
		return map[string]int{
			"samples":    cap(a.batches[0].samples) * int(unsafe.Sizeof(record.RefSample{})),
			"series":     cap(a.batches[0].series) * 8,
			"samplesBuf": cap(a.batches[0].samplesBuf),
			"unlogged":   cap(a.unlogged) * 8,
			"logSeries":  cap(a.logSeries) * int(unsafe.Sizeof(record.RefSeries{})),
			"seriesBuf":  cap(a.seriesBuf),
		}
	}

	for i := range 2 * trimAfterBatches {
		batch(200_000+i*1000, 1000, 1000)
	}
	batch(0, 50_000, 1000) // its series records alone take some 4 MB
	if b := kept()["seriesBuf"]; b <= maxKeptBytes {
		t.Fatalf("after a large batch the pooled appender kept %d bytes of series records, want its buffers for the next", b)
	}
	// Large batches of samples alone keep the series records' buffer too.
	for i := range trimAfterBatches + 1 {
		batch(0, 50_000, int64(2000+i))
	}
	if b := kept()["seriesBuf"]; b <= maxKeptBytes {
		t.Fatalf("during large batches the pooled appender kept %d bytes of series records", b)
	}
	for i := range 2 * trimAfterBatches {
		batch(100_000+i*1000, 1000, 1000)
	}
	for name, b := range kept() {
		if b > maxKeptBytes {
			t.Errorf("%d batches of 1000 after one of 50k, the pooled appender keeps %d bytes of %s", 2*trimAfterBatches, b, name)
		}
		if b == 0 {
			t.Errorf("after batches of 1000 the pooled appender kept no %s", name)
		}
	}
}
