package db

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs"
)

// testRange is the block range of the tests, in ms: small, so that a few
// thousand samples cross many.
const testRange = 1000

func openTestDB(t *testing.T, dir string, tweak func(*Options)) *DB {
	t.Helper()
	opts := DefaultOptions()
	opts.Dir = dir
	opts.Head.Stripes = 16
	opts.Head.BlockRange = testRange
	opts.CompactionInterval = 0 // the tests call Compact
	opts.RetentionTime = 0
	opts.MaxBlockDuration = testRange * time.Millisecond // no merging unless a test asks
	if tweak != nil {
		tweak(&opts)
	}
	db := Open(opts)
	if err := db.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

var matchAll = labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")

// readAll returns every sample of every series in [mint, maxt] as text,
// keyed by labels, histograms as their String.
func readAll(t *testing.T, q promstorage.Queryable, mint, maxt int64) map[string][]string {
	t.Helper()
	qr, err := q.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	out := map[string][]string{}
	ss := qr.Select(context.Background(), true, nil, matchAll)
	var it promchunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		var got []string
		for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
			switch vt {
			case promchunkenc.ValFloat:
				ts, v := it.At()
				got = append(got, fmt.Sprintf("%d:%g", ts, v))
			case promchunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				got = append(got, fmt.Sprintf("%d:h%s", ts, h.Compact(0)))
			case promchunkenc.ValFloatHistogram:
				ts, fh := it.AtFloatHistogram(nil)
				got = append(got, fmt.Sprintf("%d:fh%s", ts, fh.Compact(0)))
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[ss.At().Labels().String()] = got
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func assertSame(t *testing.T, got, want map[string][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d series, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; !slices.Equal(g, w) {
			t.Errorf("%s: got %d samples %.300v, want %d %.300v", k, len(g), g, len(w), w)
		}
	}
}

func testHistogram(i int64) *histogram.Histogram {
	n := uint64(i % 97) // counter resets now and then
	return &histogram.Histogram{
		Schema: 0, ZeroThreshold: 1e-128, ZeroCount: n, Count: 3 * n, Sum: float64(n) * 1.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{int64(n), 0},
	}
}

// writeData appends samples every 10ms in [from, to) to 20 float series
// (the odd ones stop at stopAt), one of integer and one of float
// histograms, and returns them as readAll renders them.
func writeData(t *testing.T, db *DB, from, to, stopAt int64, want map[string][]string) {
	t.Helper()
	for ts := from; ts < to; ts += 10 {
		app := db.Appender(context.Background())
		for i := range 20 {
			if i%2 == 1 && ts >= stopAt {
				continue
			}
			lset := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
			v := float64(ts*int64(i)) / 3
			if _, err := app.Append(0, lset, storage.Sample{T: ts, V: v}); err != nil {
				t.Fatal(err)
			}
			want[lset.String()] = append(want[lset.String()], fmt.Sprintf("%d:%g", ts, v))
		}
		h := testHistogram(ts)
		hl := labels.FromStrings("__name__", "h")
		if _, err := app.Append(0, hl, storage.Sample{T: ts, H: h}); err != nil {
			t.Fatal(err)
		}
		want[hl.String()] = append(want[hl.String()], fmt.Sprintf("%d:h%s", ts, h.Copy().Compact(0)))
		fh := testHistogram(ts + 5).ToFloat(nil)
		fhl := labels.FromStrings("__name__", "fh")
		if _, err := app.Append(0, fhl, storage.Sample{T: ts, FH: fh}); err != nil {
			t.Fatal(err)
		}
		want[fhl.String()] = append(want[fhl.String()], fmt.Sprintf("%d:fh%s", ts, fh.Copy().Compact(0)))
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func blockDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "wal" && e.Name() != chunksHeadDir {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCompactRoundTrip writes ten block ranges of floats and histograms,
// compacts the head into blocks and checks that every sample reads back
// the same, across the head and the blocks, before and after a restart.
func TestCompactRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, nil)
	want := map[string][]string{}
	writeData(t, db, 0, 10*testRange, 4*testRange+500, want)
	headSeries := db.Head().Stats().Series

	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// The head keeps [9000, 9990]: it compacts a range once it spans
	// one and a half.
	blocks := db.Blocks()
	if len(blocks) != 9 {
		t.Fatalf("%d blocks, want 9", len(blocks))
	}
	for i, m := range blocks {
		if m.MinTime != int64(i)*testRange || m.MaxTime != int64(i+1)*testRange-1 {
			t.Errorf("block %d covers [%d, %d]", i, m.MinTime, m.MaxTime)
		}
		// The odd float series stop half-way through block 4.
		wantSeries, wantSamples := uint64(22), uint64(2200)
		switch {
		case i == 4:
			wantSamples = 12*100 + 10*50
		case i > 4:
			wantSeries, wantSamples = 12, 1200
		}
		if m.Stats.Series != wantSeries || m.Stats.Samples != wantSamples {
			t.Errorf("block %d: %d series, %d samples; want %d, %d", i, m.Stats.Series, m.Stats.Samples, wantSeries, wantSamples)
		}
	}
	if got := db.Head().Stats().Series; got != headSeries-10 {
		t.Errorf("head holds %d series after compaction, want %d", got, headSeries-10)
	}
	if got := db.Head().MinTime(); got != 9*testRange {
		t.Errorf("head starts at %d, want %d", got, 9*testRange)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)

	// Parts of ranges, across block boundaries and into the head.
	part := readAll(t, db, 2500, 8500)
	for k, samples := range want {
		var w []string
		for _, s := range samples {
			var ts int64
			fmt.Sscanf(s, "%d:", &ts)
			if ts >= 2500 && ts <= 8500 {
				w = append(w, s)
			}
		}
		if !slices.Equal(part[k], w) {
			t.Errorf("%s in [2500, 8500]: got %d samples, want %d", k, len(part[k]), len(w))
		}
	}

	// Late samples for a compacted range are refused.
	app := db.Appender(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "m", "i", "0"), storage.Sample{T: 8999, V: 1}); err == nil {
		t.Error("append into a compacted range accepted")
	}
	app.Rollback()

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	defer db.Close()
	if n := len(db.Blocks()); n != 9 {
		t.Errorf("%d blocks after restart, want 9", n)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}

// TestCrashBetweenBlockAndCheckpoint restores the WAL as it was before a
// compaction, next to the block the compaction wrote: the state a crash
// after writing a block and before checkpointing leaves. Nothing may be
// lost or returned twice, and the next compaction must not write the
// range again.
func TestCrashBetweenBlockAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, func(o *Options) { o.Head.CheckpointOnClose = false })
	want := map[string][]string{}
	writeData(t, db, 0, 3*testRange, 3*testRange, want)
	if err := db.Head().Close(); err != nil { // as if killed: the WAL stays
		t.Fatal(err)
	}
	saved := t.TempDir()
	copyDir(t, filepath.Join(dir, "wal"), saved)
	db = openTestDB(t, dir, nil)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(db.Blocks()); n != 2 {
		t.Fatalf("%d blocks, want 2", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "wal"))
	copyDir(t, saved, filepath.Join(dir, "wal"))
	// A block left half-written by a crash during the next compaction.
	if err := os.MkdirAll(filepath.Join(dir, "01JDXM0A1B2C3D4E5F6G7H8J9K.tmp", "chunks"), 0o777); err != nil {
		t.Fatal(err)
	}

	db = openTestDB(t, dir, nil)
	defer db.Close()
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	if got := db.Head().MinTime(); got < 2*testRange {
		t.Errorf("head starts at %d after restart, want at least %d", got, 2*testRange)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if dirs := blockDirs(t, dir); len(dirs) != 2 || strings.HasSuffix(dirs[0], ".tmp") || strings.HasSuffix(dirs[1], ".tmp") {
		t.Errorf("block directories after restart and compaction: %v, want 2 blocks", dirs)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o777)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o666)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRetention(t *testing.T) {
	t.Run("time", func(t *testing.T) {
		dir := t.TempDir()
		db := openTestDB(t, dir, func(o *Options) { o.RetentionTime = 3 * testRange * time.Millisecond })
		defer db.Close()
		writeData(t, db, 0, 10*testRange, 10*testRange, map[string][]string{})
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		// Newest sample 9990: blocks ending before 6990 go.
		blocks := db.Blocks()
		if len(blocks) != 3 || blocks[0].MinTime != 6*testRange {
			t.Errorf("blocks after retention: %+v, want [6000, 8999]", blocks)
		}
		if got := db.Stats().RetentionDeletions; got != 6 {
			t.Errorf("%d blocks deleted, want 6", got)
		}
		if dirs := blockDirs(t, dir); len(dirs) != 3 {
			t.Errorf("block directories left: %v", dirs)
		}
		got := readAll(t, db, math.MinInt64, math.MaxInt64)
		if s := got[`{__name__="m", i="0"}`]; len(s) == 0 || !strings.HasPrefix(s[0], "6000:") {
			t.Errorf("oldest sample after retention: %.40v", s)
		}
	})
	t.Run("size", func(t *testing.T) {
		dir := t.TempDir()
		db := openTestDB(t, dir, nil)
		writeData(t, db, 0, 10*testRange, 10*testRange, map[string][]string{})
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db = openTestDB(t, dir, nil)
		wal, err := dirSize(vfs.OS{}, filepath.Join(dir, "wal"))
		if err != nil {
			t.Fatal(err)
		}
		// Room for the WAL, the head's chunk files and the newest three
		// blocks.
		limit := wal + db.Head().Stats().ChunkFileBytes
		for _, m := range db.Blocks()[6:] {
			limit += m.Stats.Bytes
		}
		db.Close()
		db = openTestDB(t, dir, func(o *Options) { o.RetentionSize = limit })
		defer db.Close()
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		if blocks := db.Blocks(); len(blocks) != 3 || blocks[0].MinTime != 6*testRange {
			t.Errorf("blocks after size retention: %d, want the 3 from 6000 on", len(blocks))
		}
	})
}

// TestMergeBlocks lets blocks merge into larger ones, checks every sample
// reads back the same, and then puts the merged blocks' sources back, as
// a crash between writing a merged block and deleting its sources leaves
// them: the next start must delete them.
func TestMergeBlocks(t *testing.T) {
	dir := t.TempDir()
	noMerge := openTestDB(t, dir, nil)
	want := map[string][]string{}
	writeData(t, noMerge, 0, 10*testRange, 4*testRange+500, want)
	if err := noMerge.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := noMerge.Close(); err != nil {
		t.Fatal(err)
	}
	saved := t.TempDir()
	copyDir(t, dir, saved)

	merging := func(o *Options) { o.MaxBlockDuration = 0 }
	db := openTestDB(t, dir, merging)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// 0-2, 3-5 and 6-7 merge into 3000ms blocks, and those into one of
	// up to 9000ms; the newest block waits.
	blocks := db.Blocks()
	if len(blocks) != 2 || blocks[0].MinTime != 0 || blocks[0].MaxTime != 8*testRange-1 || blocks[0].Level != 3 || len(blocks[0].Sources) != 8 {
		t.Fatalf("blocks after merging: %+v", blocks)
	}
	if blocks[0].Stats.Samples != 8*22*100-10*50-3*10*100 {
		t.Errorf("merged block holds %d samples", blocks[0].Stats.Samples)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	entries, err := os.ReadDir(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "wal" {
			copyDir(t, filepath.Join(saved, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	db = openTestDB(t, dir, merging)
	defer db.Close()
	if got := db.Blocks(); len(got) != 2 || got[0].ULID != blocks[0].ULID {
		t.Errorf("blocks after restart with sources left: %d, want the merged one and the newest", len(got))
	}
	if dirs := blockDirs(t, dir); len(dirs) != 2 {
		t.Errorf("block directories after restart: %v", dirs)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}

// TestCompactsWhenHeadIsFull checks that the store writes a block as soon
// as the head spans one and a half ranges, not only at its tick.
func TestCompactsWhenHeadIsFull(t *testing.T) {
	db := openTestDB(t, t.TempDir(), func(o *Options) { o.CompactionInterval = time.Hour })
	defer db.Close()
	writeData(t, db, 0, 2*testRange, 2*testRange, map[string][]string{})
	deadline := time.Now().Add(30 * time.Second)
	for len(db.Blocks()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no block written within 30s of the head spanning two ranges")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMergeWaitsForShipping checks that a block not yet shipped is not
// merged (a merge deletes its sources) and that BlockWritten is told of
// every block written from the head; once shipped, the merge goes ahead.
func TestMergeWaitsForShipping(t *testing.T) {
	var shipped atomic.Bool
	var written atomic.Int64
	db := openTestDB(t, t.TempDir(), func(o *Options) {
		o.MaxBlockDuration = 0
		o.Shipped = func(block.Meta) bool { return shipped.Load() }
		o.BlockWritten = func() { written.Add(1) }
	})
	defer db.Close()
	want := map[string][]string{}
	writeData(t, db, 0, 10*testRange, 10*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	blocks := db.Blocks()
	if len(blocks) != 9 || written.Load() != 9 {
		t.Fatalf("%d blocks written, %d told of; want 9 level-1 blocks unmerged", len(blocks), written.Load())
	}
	for _, m := range blocks {
		if m.Level != 1 {
			t.Fatalf("block %s of level %d merged before it was shipped", m.ULID, m.Level)
		}
	}
	shipped.Store(true)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if blocks := db.Blocks(); len(blocks) != 2 || blocks[0].Level != 3 {
		t.Errorf("blocks once shipped: %+v, want the merge and the newest", blocks)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}
