package backfill

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/block"
)

type sample struct {
	t int64
	v float64
}

// lines is an input: series with samples, in the order given.
type line struct {
	lset    labels.Labels
	samples []sample
}

func source(lines []line) Source {
	return func(add func(labels.Labels, []int64, []float64) error) error {
		for _, l := range lines {
			var ts []int64
			var vs []float64
			for _, s := range l.samples {
				ts, vs = append(ts, s.t), append(vs, s.v)
			}
			if err := add(l.lset, ts, vs); err != nil {
				return err
			}
		}
		return nil
	}
}

// read returns every sample of the blocks in dir, by series.
func read(t *testing.T, metas []block.Meta, dir string) map[string][]sample {
	t.Helper()
	got := map[string][]sample{}
	for _, m := range metas {
		b, err := block.Open(block.LocalFiles(filepath.Join(dir, m.ULID.String())))
		if err != nil {
			t.Fatal(err)
		}
		q, err := b.Querier(m.MinTime, m.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
		var it promchunkenc.Iterator
		for ss.Next() {
			s := ss.At()
			it = s.Iterator(it)
			for it.Next() == promchunkenc.ValFloat {
				ts, v := it.At()
				if ts < m.MinTime || ts > m.MaxTime {
					t.Errorf("block [%d, %d] holds a sample at %d", m.MinTime, m.MaxTime, ts)
				}
				got[s.Labels().String()] = append(got[s.Labels().String()], sample{ts, v})
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		q.Close()
		b.Close()
	}
	return got
}

// TestWrite backfills series whose samples come out of order, split
// over lines and over block ranges (before 1970 too), with duplicates,
// and reads the blocks back.
func TestWrite(t *testing.T) {
	const hour = 3600_000
	a := labels.FromStrings("__name__", "a", "job", "x")
	b := labels.FromStrings("__name__", "b")
	stale := math.Float64frombits(0x7ff0000000000002)
	var many []sample
	for i := range 500 {
		many = append(many, sample{int64(i) * 1000, float64(i)})
	}
	lines := []line{
		{a, []sample{{5 * hour, 5}, {1 * hour, 1}, {-1, -1}}},
		{b, many},
		{a, []sample{{3 * hour, 3}, {1 * hour, 1}, {2*hour - 1, stale}}},
	}
	dir := t.TempDir()
	opts := DefaultOptions()
	metas, err := Write(context.Background(), source(lines), dir, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, m := range metas {
		ranges = append(ranges, fmt.Sprintf("[%d,%d]", m.MinTime, m.MaxTime))
	}
	if want := []string{"[-7200000,-1]", "[0,7199999]", "[7200000,14399999]", "[14400000,21599999]"}; !slices.Equal(ranges, want) {
		t.Fatalf("blocks %v, want %v", ranges, want)
	}
	got := read(t, metas, dir)
	wantA := []sample{{-1, -1}, {1 * hour, 1}, {2*hour - 1, stale}, {3 * hour, 3}, {5 * hour, 5}}
	if g := got[a.String()]; len(g) != len(wantA) || !slices.EqualFunc(g, wantA, func(x, y sample) bool { return x.t == y.t && math.Float64bits(x.v) == math.Float64bits(y.v) }) {
		t.Errorf("series a: %v, want %v", g, wantA)
	}
	if !slices.Equal(got[b.String()], many) {
		t.Errorf("series b: %d samples, want %d", len(got[b.String()]), len(many))
	}

	lines = append(lines, line{a, []sample{{3 * hour, 4}}})
	if _, err := Write(context.Background(), source(lines), t.TempDir(), opts, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "same timestamp") {
		t.Errorf("two values at one timestamp: %v", err)
	}
}
