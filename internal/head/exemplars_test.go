package head

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs"
)

func exemplarAt(ts int64, trace string) exemplar.Exemplar {
	return exemplar.Exemplar{Labels: labels.FromStrings("trace_id", trace), Value: float64(ts) / 1000, Ts: ts, HasTs: true}
}

// selectExemplars returns "series: trace@ts ..." per series, sorted.
func selectExemplars(t *testing.T, h *Head, start, end int64, ms ...*labels.Matcher) []string {
	t.Helper()
	q, _ := h.ExemplarQuerier(context.Background())
	res, err := q.Select(start, end, ms)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		var b strings.Builder
		b.WriteString(r.SeriesLabels.Get("s") + ":")
		for _, e := range r.Exemplars {
			fmt.Fprintf(&b, " %s@%d", e.Labels.Get("trace_id"), e.Ts)
		}
		out = append(out, b.String())
	}
	return out
}

func TestExemplars(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.MaxExemplars = 4
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	a, b := labels.FromStrings("__name__", "m", "s", "a"), labels.FromStrings("__name__", "m", "s", "b")
	app := h.Appender(context.Background())
	mustAppend(t, app, a, 1000, 1)
	mustAppend(t, app, b, 1000, 1)
	for _, c := range []struct {
		lset labels.Labels
		e    exemplar.Exemplar
		want error
	}{
		{a, exemplarAt(1000, "a1"), nil},
		{a, exemplarAt(2000, "a2"), nil},
		{b, exemplarAt(1500, "b1"), nil},
		{a, exemplarAt(1500, "late"), nil}, // checked against stored ones only: the batch is not committed yet
	} {
		if _, err := app.AppendExemplar(0, c.lset, c.e); !errors.Is(err, c.want) {
			t.Fatalf("append %v: %v", c.e, err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	// The late exemplar was dropped when applied: it is older than a2.
	want := []string{"a: a1@1000 a2@2000", "b: b1@1500"}
	if got := selectExemplars(t, h, math.MinInt64, math.MaxInt64, m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	app = h.Appender(context.Background())
	if _, err := app.AppendExemplar(0, a, exemplarAt(1500, "old")); !errors.Is(err, storage.ErrOutOfOrderExemplar) {
		t.Fatalf("older exemplar: got %v, want ErrOutOfOrderExemplar", err)
	}
	if _, err := app.AppendExemplar(0, a, exemplarAt(2000, "a2")); err != nil {
		t.Fatalf("exact repeat: %v", err)
	}
	long := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", strings.Repeat("x", 130)), Ts: 3000}
	if _, err := app.AppendExemplar(0, a, long); !errors.Is(err, storage.ErrExemplarLabelLength) {
		t.Fatalf("long labels: got %v", err)
	}
	// Two more fill the ring of 4 and push out the oldest, a1.
	for _, e := range []exemplar.Exemplar{exemplarAt(3000, "a3"), exemplarAt(4000, "a4")} {
		if _, err := app.AppendExemplar(0, a, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	want = []string{"a: a2@2000 a3@3000 a4@4000", "b: b1@1500"}
	if got := selectExemplars(t, h, math.MinInt64, math.MaxInt64, m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after wrap: got %q, want %q", got, want)
	}
	if got := selectExemplars(t, h, 2500, 3500, m); fmt.Sprint(got) != fmt.Sprint([]string{"a: a3@3000"}) {
		t.Fatalf("time range: got %q", got)
	}

	// Both replay paths keep them: the WAL (the first two opens), then a
	// checkpoint written by the second close (the third open).
	h.Close()
	for i, cp := range []bool{false, true, false} {
		opts.CheckpointOnClose = cp
		h, err = Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := selectExemplars(t, h, math.MinInt64, math.MaxInt64, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("open %d: got %q, want %q", i, got, want)
		}
		h.Close()
	}
	if cp, _, _, _ := checkpointChain(vfs.OS{}, dir); cp == "" {
		t.Fatal("no checkpoint was read")
	}
}

// TestExemplarCreatesSeries stores an exemplar of a series that has no
// samples, as Prometheus does: the exemplar creates the series, which
// holds no samples and is found by its exemplars, after a restart too
// (from the WAL, then from a checkpoint).
func TestExemplarCreatesSeries(t *testing.T) {
	opts := DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.MaxExemplars = 4
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := labels.FromStrings("__name__", "m", "s", "c")
	app := h.Appender(context.Background())
	if _, err := app.AppendExemplar(0, c, exemplarAt(1000, "c1")); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	want := []string{"c: c1@1000"}
	for i, cp := range []bool{false, true, false} {
		if got := selectExemplars(t, h, math.MinInt64, math.MaxInt64, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("open %d: got %q, want %q", i, got, want)
		}
		if got := readAll(t, h, math.MinInt64, math.MaxInt64, m); len(got) != 0 {
			t.Fatalf("open %d: samples %v of a series that has none", i, got)
		}
		h.Close()
		opts.CheckpointOnClose = cp
		if h, err = Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	h.Close()
}

// TestExemplarReplacesItsSeriesLast stores an exemplar whose slot in a
// full ring holds its own series' only exemplar: the series keeps the new
// one, where evicting the old one removed the series and left the new
// exemplar unreachable.
func TestExemplarReplacesItsSeriesLast(t *testing.T) {
	opts := DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.MaxExemplars = 2
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	a, b := labels.FromStrings("__name__", "m", "s", "a"), labels.FromStrings("__name__", "m", "s", "b")
	app := h.Appender(t.Context())
	mustAppend(t, app, a, 1000, 1)
	mustAppend(t, app, b, 1000, 1)
	for _, x := range []struct {
		lset labels.Labels
		e    exemplar.Exemplar
	}{{a, exemplarAt(1000, "a1")}, {b, exemplarAt(1000, "b1")}, {a, exemplarAt(2000, "a2")}} {
		if _, err := app.AppendExemplar(0, x.lset, x.e); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	if got, want := selectExemplars(t, h, math.MinInt64, math.MaxInt64, m), []string{"a: a2@2000", "b: b1@1000"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
