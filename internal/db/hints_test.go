package db

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/storage"
)

// TestHistogramsAsPrometheus loads the same native histograms into strata
// and into Prometheus' TSDB, both with blocks of an hour and a head, and
// checks the counter-reset hints the samples come back with, and that
// PromQL over the two answers the same, warnings included.
//
// Prometheus' storage says "unknown" for the first histogram of every
// chunk, "not a reset" for the others, "gauge" throughout gauge series:
// never "reset", even where its chunk was cut at a reset. strata gives
// the same, but cuts histogram chunks elsewhere (at 120 samples where
// Prometheus aims at 1 KiB in its own encoding, and not after a
// staleness marker), so a sample may be "unknown" in one and "not a
// reset" in the other. Neither changes an answer: "unknown" has rate
// compare the histogram with the one before, which within a chunk never
// shows a reset. A "reset" from either would: sum would warn of a
// collision with "not a reset", which Prometheus never does.
func TestHistogramsAsPrometheus(t *testing.T) {
	const (
		step  = 15000
		n     = 700 // 2.9 hours: two blocks and the head
		hour  = int64(time.Hour / time.Millisecond)
		start = int64(0)
	)
	rng := rand.New(rand.NewPCG(1, 2))
	type sample struct {
		t  int64
		h  *histogram.Histogram
		fh *histogram.FloatHistogram
	}
	hist := func(c uint64, hint histogram.CounterResetHint) *histogram.Histogram {
		return &histogram.Histogram{CounterResetHint: hint, Count: c * 3, ZeroCount: c, Sum: float64(c) * 1.5, ZeroThreshold: 0.001,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{int64(c), 0}}
	}
	series := map[string][]sample{}
	var c, fc uint64
	for i := range n {
		ts := start + int64(i)*step
		// A counter that resets now and then, and goes stale once.
		if rng.IntN(40) == 0 {
			c = 0
		}
		c += uint64(rng.IntN(10))
		h := hist(c, histogram.UnknownCounterReset)
		if i == 300 {
			h = &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}
		}
		series[`counter`] = append(series[`counter`], sample{t: ts, h: h})
		// Another counter, so that aggregations see two.
		series[`other`] = append(series[`other`], sample{t: ts, h: hist(uint64(i), histogram.UnknownCounterReset)})
		// Gauge histograms.
		series[`gauge`] = append(series[`gauge`], sample{t: ts, h: hist(uint64(rng.IntN(100)), histogram.GaugeType)})
		// A float histogram counter that resets.
		if rng.IntN(60) == 0 {
			fc = 0
		}
		fc += uint64(rng.IntN(5))
		series[`float`] = append(series[`float`], sample{t: ts, fh: hist(fc, histogram.UnknownCounterReset).ToFloat(nil)})
	}
	names := []string{"counter", "other", "gauge", "float"}

	opts := DefaultOptions()
	opts.Dir = t.TempDir()
	opts.Head.BlockRange = hour
	opts.CompactionInterval = 0
	opts.RetentionTime = 0
	opts.MaxBlockDuration = time.Hour
	sdb := Open(opts)
	if err := sdb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	popts := tsdb.DefaultOptions()
	popts.MinBlockDuration, popts.MaxBlockDuration = hour, hour
	popts.RetentionDuration = 0
	pdb, err := tsdb.Open(t.TempDir(), nil, nil, popts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	for i := range n {
		app, papp := sdb.Appender(context.Background()), pdb.Appender(context.Background())
		for _, name := range names {
			s, lset := series[name][i], labels.FromStrings("__name__", "h_"+name, "kind", name)
			if _, err := app.Append(0, lset, storage.Sample{T: s.t, H: s.h, FH: s.fh}); err != nil {
				t.Fatalf("strata: %s at %d: %v", name, s.t, err)
			}
			if _, err := papp.AppendHistogram(0, lset, s.t, s.h, s.fh); err != nil {
				t.Fatalf("prometheus: %s at %d: %v", name, s.t, err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := papp.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := sdb.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := pdb.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(pdb.Blocks()) < 2 || sdb.Stats().Blocks < 2 {
		t.Fatalf("%d blocks in Prometheus, %d in strata; want two or more in each", len(pdb.Blocks()), sdb.Stats().Blocks)
	}

	// Every sample's hint, from a querier over all of it and from one
	// that starts mid-block.
	type hinted struct {
		t    int64
		hint histogram.CounterResetHint
	}
	hints := func(q promstorage.Queryable, mint int64, name string) []hinted {
		qr, err := q.Querier(mint, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer qr.Close()
		ss := qr.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "kind", name))
		var out []hinted
		for ss.Next() {
			it := ss.At().Iterator(nil)
			for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
				_, fh := it.AtFloatHistogram(nil)
				out = append(out, hinted{it.AtT(), fh.CounterResetHint})
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	differ := 0 // samples whose hints differ where the chunks start
	for _, name := range names {
		for _, mint := range []int64{math.MinInt64, hour / 2, 2*hour + 7*step} {
			got, want := hints(sdb, mint, name), hints(pdb, mint, name)
			if len(got) != len(want) {
				t.Errorf("%s from %d: %d samples, Prometheus %d", name, mint, len(got), len(want))
				continue
			}
			for i := range want {
				g, w := got[i].hint, want[i].hint
				switch {
				case got[i].t != want[i].t:
					t.Fatalf("%s from %d, sample %d: at %d, Prometheus at %d", name, mint, i, got[i].t, want[i].t)
				case g == histogram.CounterReset || (w == histogram.GaugeType) != (g == histogram.GaugeType):
					t.Errorf("%s from %d, sample %d at %d: hint %v, Prometheus %v", name, mint, i, got[i].t, g, w)
				case g != w:
					differ++
				}
			}
		}
	}

	t.Logf("%d samples' hints differ between unknown and not a reset", differ)

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 50000000, Timeout: time.Minute})
	for _, qs := range []string{
		`sum(h_counter)`, `sum({kind=~"counter|other"})`, `avg({kind=~"counter|other"})`,
		`sum({kind=~"counter|float"})`, `sum(h_gauge)`, `sum({kind=~"gauge|other"})`,
		`sum_over_time(h_counter[5m])`, `avg_over_time(h_counter[5m])`, `sum_over_time(h_float[10m])`,
		`avg_over_time(h_gauge[5m])`, `rate(h_counter[5m])`, `increase(h_float[5m])`, `sum(rate({kind=~"counter|other"}[5m]))`,
		`histogram_count(rate(h_counter[5m]))`, `resets(h_counter[30m])`,
	} {
		for _, r := range [][2]int64{{0, n * step}, {hour - 10*step, hour + 10*step}, {2*hour - 3*step, 2*hour + 3*step}} {
			var res [2]*promql.Result
			for i, q := range []promstorage.Queryable{sdb, pdb} {
				qry, err := engine.NewRangeQuery(context.Background(), q, nil, qs, timestamp.Time(r[0]), timestamp.Time(r[1]), time.Minute/4)
				if err != nil {
					t.Fatal(err)
				}
				res[i] = qry.Exec(context.Background())
				defer qry.Close()
			}
			if d := diffHistogramResults(qs, res[0], res[1]); d != "" {
				t.Errorf("%s over [%d, %d]: %s", qs, r[0], r[1], d)
			}
		}
	}
}

// diffHistogramResults describes how strata's result got differs from
// Prometheus' want, or returns "".
func diffHistogramResults(qs string, got, want *promql.Result) string {
	if (got.Err == nil) != (want.Err == nil) {
		return fmt.Sprintf("error %v, Prometheus %v", got.Err, want.Err)
	}
	gw, gi := got.Warnings.AsStrings(qs, 0, 0)
	ww, wi := want.Warnings.AsStrings(qs, 0, 0)
	slices.Sort(gw)
	slices.Sort(ww)
	slices.Sort(gi)
	slices.Sort(wi)
	if !slices.Equal(gw, ww) || !slices.Equal(gi, wi) {
		return fmt.Sprintf("warnings %q infos %q, Prometheus %q %q", gw, gi, ww, wi)
	}
	if got.Err != nil {
		return ""
	}
	g, w := got.Value.(promql.Matrix), want.Value.(promql.Matrix)
	if len(g) != len(w) {
		return fmt.Sprintf("%d series, Prometheus %d", len(g), len(w))
	}
	for i := range w {
		if !labels.Equal(g[i].Metric, w[i].Metric) || len(g[i].Floats) != len(w[i].Floats) || len(g[i].Histograms) != len(w[i].Histograms) {
			return fmt.Sprintf("series %d: %s, Prometheus %s", i, g[i].Metric, w[i].Metric)
		}
		for j := range w[i].Floats {
			if g[i].Floats[j] != w[i].Floats[j] && !(math.IsNaN(g[i].Floats[j].F) && math.IsNaN(w[i].Floats[j].F)) {
				return fmt.Sprintf("%s point %d: %v, Prometheus %v", w[i].Metric, j, g[i].Floats[j], w[i].Floats[j])
			}
		}
		for j := range w[i].Histograms {
			gh, wh := g[i].Histograms[j], w[i].Histograms[j]
			// The API does not show a histogram's hint; see the test's
			// comment for why the two may differ.
			if gh.T != wh.T || !gh.H.Equals(wh.H) {
				return fmt.Sprintf("%s point %d at %d: %v, Prometheus %v", w[i].Metric, j, wh.T, gh.H, wh.H)
			}
		}
	}
	return ""
}
