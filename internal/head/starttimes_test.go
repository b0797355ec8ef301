package head

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/storage"
)

// readStarts returns, per series, the start time AtST gives for each sample.
func readStarts(t *testing.T, h *Head) map[string][]int64 {
	t.Helper()
	qr, err := h.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	out := map[string][]int64{}
	ss := qr.Select(context.Background(), true, nil, all)
	var it promchunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		var sts []int64
		for it.Next() != promchunkenc.ValNone {
			sts = append(sts, it.AtST())
		}
		out[ss.At().Labels().String()] = sts
	}
	return out
}

func TestStartTimes(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions()
			opts.WALDir = dir
			opts.CheckpointOnClose = checkpoint
			h, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			counter := labels.FromStrings("__name__", "c_total")
			hist := labels.FromStrings("__name__", "h")
			gauge := labels.FromStrings("__name__", "g")
			want := map[string][]int64{}
			// 3 batches of 10 samples per series, 1 s apart from 1 s on.
			// The counter starts at 500, restarts before sample 15 (start
			// 15_500), and its samples 25..27 come without a start time;
			// the histogram's first start time is after its sample (kept,
			// as Prometheus keeps it), then 50; the gauge has none.
			for b := range 3 {
				app := h.Appender(context.Background())
				for k := range 10 {
					i := b*10 + k
					ts := int64(i+1) * 1000
					st := int64(500)
					switch {
					case i >= 25 && i <= 27:
						st = 0
					case i >= 15:
						st = 15_500
					}
					if _, err := app.Append(0, counter, storage.Sample{T: ts, V: float64(i), ST: st}); err != nil {
						t.Fatal(err)
					}
					want[counter.String()] = append(want[counter.String()], st)
					hst, wantH := int64(50), int64(50)
					if i == 0 {
						hst, wantH = 5000, 5000 // after the sample
					}
					if _, err := app.Append(0, hist, storage.Sample{T: ts, H: testHistogram(i), ST: hst}); err != nil {
						t.Fatal(err)
					}
					want[hist.String()] = append(want[hist.String()], wantH)
					if _, err := app.Append(0, gauge, storage.Sample{T: ts, V: 1}); err != nil {
						t.Fatal(err)
					}
					want[gauge.String()] = append(want[gauge.String()], 0)
				}
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			check := func(h *Head) {
				t.Helper()
				got := readStarts(t, h)
				for k, w := range want {
					if fmt.Sprint(got[k]) != fmt.Sprint(w) {
						t.Fatalf("%s: start times\n got %v\nwant %v", k, got[k], w)
					}
				}
				// Only changes are kept: the counter's four, the histogram's two.
				for _, c := range []struct {
					lset labels.Labels
					n    int
				}{{counter, 4}, {hist, 2}} {
					s := h.series.getByHash(c.lset.Hash(), c.lset)
					if got := len(s.startsSnapshot()); got != c.n {
						t.Fatalf("%s keeps %d start time changes, want %d", c.lset, got, c.n)
					}
				}
				if s := h.series.getByHash(gauge.Hash(), gauge); s.extra != nil && s.extra.starts.list != nil {
					t.Fatal("a series without start times has a start time history")
				}
			}
			check(h)
			h = reopen(t, h, opts)
			check(h)
		})
	}
}
