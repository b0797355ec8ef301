package head

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal"
)

// TestOpenRepairsCorruptSegment flips a byte in the middle of a WAL
// segment that is not the last: the head must still open, with every
// sample logged before the damage and every sample of the later segments.
func TestOpenRepairsCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.WAL.SegmentSize = 32 << 10
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	writeBatches(t, h, 50, 200, 0, want) // about 170 KiB: several segments
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	segs := walEntries(t, dir)
	if len(segs) < 4 {
		t.Fatalf("want at least 4 segments, have %v", segs)
	}
	victim := filepath.Join(dir, segs[1])
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}

	h2, err := Open(opts)
	if err != nil {
		t.Fatalf("head did not open after mid-log corruption: %v", err)
	}
	defer h2.Close()
	got := readAll(t, h2, math.MinInt64, math.MaxInt64, all)
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d", len(got), len(want))
	}
	var lost int
	for k, w := range want {
		g := got[k]
		// What survives is a prefix (everything before the damage) plus
		// a suffix (the later segments): check each sample is one of the
		// written ones, in order.
		j := 0
		for _, s := range g {
			for j < len(w) && w[j] != s {
				j++
			}
			if j == len(w) {
				t.Fatalf("series %s: sample %v was never written", k, s)
			}
		}
		if g[0] != w[0] || g[len(g)-1] != w[len(w)-1] {
			t.Fatalf("series %s: lost its first or last sample: %v .. %v", k, g[0], g[len(g)-1])
		}
		lost += len(w) - len(g)
	}
	if lost == 0 {
		t.Fatal("no sample lost: the corruption was not where the test meant it to be")
	}
	if lost > 50*200/2 {
		t.Fatalf("%d samples lost: more than the damaged segment held", lost)
	}
}

// TestReplayRejectsInvalidHistograms logs histograms that pass the WAL's
// checksums but are not self-consistent, as a damaged or foreign log could
// hold: replay must skip them, not crash, and keep the valid ones.
func TestReplayRejectsInvalidHistograms(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	lset := labels.FromStrings("__name__", "h")
	app := h.Appender(context.Background())
	ref, err := app.Append(0, lset, storage.Sample{T: 1000, H: testHistogram(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	w, err := wal.Open(dir, wal.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	badSpans := testHistogram(2)
	badSpans.PositiveSpans = []histogram.Span{{Offset: 0, Length: 9}} // 2 buckets
	badCount := testHistogram(3).ToFloat(nil)
	badCount.Count = -1
	if err := w.Log(
		record.EncodeHistogramSamples(nil, []record.RefHistogramSample{{Ref: ref, T: 2000, H: badSpans}, {Ref: ref, T: 3000, H: testHistogram(3)}}),
		record.EncodeFloatHistogramSamples(nil, []record.RefFloatHistogramSample{{Ref: ref, T: 4000, FH: badCount}}),
	); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	h, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := readAny(t, h, all)[lset.String()]
	if len(got) != 2 || got[0].t != 1000 || got[1].t != 3000 {
		t.Fatalf("replayed %v, want the valid histograms at 1000 and 3000", got)
	}
}
