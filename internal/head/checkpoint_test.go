package head

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal"
)

// writeBatches appends batches of one sample per series, timestamps from
// t0 on, and returns what it wrote.
func writeBatches(t *testing.T, h *Head, nseries, batches int, t0 int64, want map[string][]sample) {
	t.Helper()
	for b := range batches {
		app := h.Appender(context.Background())
		for i := range nseries {
			lset := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
			ts, v := t0+int64(b)*1000, float64(i*b)
			mustAppend(t, app, lset, ts, v)
			want[lset.String()] = append(want[lset.String()], sample{ts, v})
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func walEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestCheckpointThenReplay checkpoints mid-way, writes more, "crashes"
// (closes without a final checkpoint) and expects everything back from the
// checkpoint plus the later segments, with the covered segments gone.
func TestCheckpointThenReplay(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	// 150 samples per series: the checkpoint holds a closed and an open
	// chunk per series.
	writeBatches(t, h, 30, 150, 0, want)
	if err := h.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	writeBatches(t, h, 30, 50, 150_000, want)
	// A new series after the checkpoint, only in the WAL.
	writeBatches(t, h, 31, 1, 200_000, want)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	names := walEntries(t, dir)
	cps := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !strings.HasPrefix(n, checkpointPrefix) })
	if len(cps) != 1 {
		t.Fatalf("want one checkpoint, have %v", names)
	}
	if slices.Contains(names, "00000000") {
		t.Fatalf("segment covered by the checkpoint was not deleted: %v", names)
	}
	// The next checkpoint waits for the WAL to grow by what this one's
	// records took before compression, not by its compressed bytes: a
	// checkpoint rewrites the former.
	st, err := os.Stat(filepath.Join(dir, cps[0], "00000000"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.checkpointSize.Load(); got <= st.Size() {
		t.Errorf("checkpoint size for the next trigger %d, not above the %d bytes on disk", got, st.Size())
	}
	// The series repeat each other's labels: their records are
	// compressed.
	kinds := map[record.Type]int{}
	if _, err := wal.Replay(filepath.Join(dir, cps[0]), wal.ReplayOptions{}, func(rec []byte) error {
		kinds[record.Kind(rec)]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if kinds[record.Compressed] == 0 || kinds[record.ChunkSeries] > 0 {
		t.Errorf("checkpoint records by type: %v, want the chunk series compressed", kinds)
	}

	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			opts.ReplayWorkers = workers
			h2, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Close()
			assertEqual(t, readAll(t, h2, math.MinInt64, math.MaxInt64, all), want)
			// Appends continue after the restored chunks, and duplicates of
			// the last restored sample are still recognised.
			app := h2.Appender(context.Background())
			lset := labels.FromStrings("__name__", "m", "i", "3")
			last := want[lset.String()][len(want[lset.String()])-1]
			mustAppend(t, app, lset, last.t, last.v)
			if _, err := app.Append(0, lset, sampleOf(last.t, last.v+1)); err == nil {
				t.Fatal("different value at the last restored timestamp accepted")
			}
			app.Rollback()
		})
	}
}

// TestCheckpointAllocations checks that what a checkpoint allocates does
// not grow with its series: each series' labels and chunk copies reuse
// the memory of the one before. Building them anew for each series made
// checkpoints most of what a head of a million series allocated while it
// took writes.
func TestCheckpointAllocations(t *testing.T) {
	allocs := func(nseries int) float64 {
		opts := DefaultOptions()
		opts.WALDir = t.TempDir()
		opts.CheckpointOnClose = false
		h, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		// A closed and an open chunk per series.
		writeBatches(t, h, nseries, 130, 0, map[string][]sample{})
		n := 0
		return testing.AllocsPerRun(2, func() {
			n++
			if _, _, err := h.writeCheckpoint(filepath.Join(opts.WALDir, fmt.Sprintf("cp%d", n)), checkpointKind{full: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(500), allocs(2500)
	if large-small > 200 {
		t.Errorf("a checkpoint of 2500 series allocates %.0f times, of 500 series %.0f: %.2f more per series", large, small, (large-small)/2000)
	}
}

// TestCloseCheckpointsAndTruncates checks that a clean close leaves a
// checkpoint and no segment with data before it, and that restarting many
// times neither loses nor duplicates samples.
func TestCloseCheckpointsAndTruncates(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]sample{}
	for round := range 4 {
		h := openTestHead(t, dir)
		assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
		writeBatches(t, h, 10, 30, int64(round)*100_000, want)
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		var segs int
		for _, n := range walEntries(t, dir) {
			if !strings.HasPrefix(n, checkpointPrefix) {
				segs++
				if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Size() != 0 {
					t.Fatalf("round %d: segment %s left with data after a clean close", round, n)
				}
			}
		}
		if segs > 1 {
			t.Fatalf("round %d: %d segments left", round, segs)
		}
	}
	h := openTestHead(t, dir)
	defer h.Close()
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
}

// TestInterruptedCheckpointIgnored checks that a temporary checkpoint left
// by a crash is removed and the data still comes from the WAL.
func TestInterruptedCheckpointIgnored(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	writeBatches(t, h, 5, 10, 0, want)
	h.Close()
	junk := filepath.Join(dir, checkpointPrefix+"00000009"+checkpointTmp)
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "00000000"), []byte("half a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	h2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	assertEqual(t, readAll(t, h2, math.MinInt64, math.MaxInt64, all), want)
	if _, err := os.Stat(junk); !os.IsNotExist(err) {
		t.Fatalf("temporary checkpoint not removed: %v", err)
	}
}

// TestCheckpointTriggeredByWALGrowth checks that commits start a
// checkpoint once the WAL has grown past the bound.
func TestCheckpointTriggeredByWALGrowth(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointMinBytes = 64 << 10
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	writeBatches(t, h, 100, 100, 0, want) // about 1.5 MB of WAL
	h.background.Wait()
	if h.checkpointSize.Load() == 0 {
		t.Fatal("no checkpoint written")
	}
	h.Close()
	h2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	assertEqual(t, readAll(t, h2, math.MinInt64, math.MaxInt64, all), want)
}

// TestMetadataPersists checks that metric metadata survives both WAL
// replay and a checkpoint, that the latest value wins, and that an
// unchanged repeat is not logged again.
func TestMetadataPersists(t *testing.T) {
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
			set := func(name string, md storage.Metadata) {
				app := h.Appender(context.Background())
				if err := app.SetMetadata(name, md); err != nil {
					t.Fatal(err)
				}
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			set("up", storage.Metadata{Type: "gauge", Help: "old help"})
			set("up", storage.Metadata{Type: "gauge", Help: "Target is up."})
			set("reqs_total", storage.Metadata{Type: "counter", Unit: "requests"})
			before := h.Stats().WALBytesWritten
			set("reqs_total", storage.Metadata{Type: "counter", Unit: "requests"})
			if h.Stats().WALBytesWritten != before {
				t.Fatal("unchanged metadata was logged again")
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			h2, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Close()
			want := map[string]storage.Metadata{
				"up":         {Type: "gauge", Help: "Target is up."},
				"reqs_total": {Type: "counter", Unit: "requests"},
			}
			if got := h2.Metadata(""); !maps.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if got := h2.Metadata("up"); len(got) != 1 {
				t.Fatalf("one metric: got %v", got)
			}
		})
	}
}

// TestReplaySortsPostings restores series from a checkpoint, which lists
// them in map order, and checks that the index's lists come out sorted and
// that matchers intersecting them find exactly the right series.
func TestReplaySortsPostings(t *testing.T) {
	dir := t.TempDir()
	h := openTestHead(t, dir)
	app := h.Appender(context.Background())
	const n = 500
	for i := range n {
		mustAppend(t, app, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i), "two", fmt.Sprint(i%2), "three", fmt.Sprint(i%3)), 1, 1)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil { // writes a checkpoint
		t.Fatal(err)
	}
	h = openTestHead(t, dir)
	defer h.Close()

	all, _ := h.index.AllPostings()
	lists := [][]storage.SeriesRef{mustExpand(t, all)}
	for _, name := range h.index.LabelNames() {
		vals, _ := h.index.LabelValues(name)
		for _, v := range vals {
			p, _ := h.index.Postings(name, v)
			lists = append(lists, mustExpand(t, p))
		}
	}
	for _, l := range lists {
		if !slices.IsSorted(l) {
			t.Fatalf("postings list not sorted after replay: %v", l)
		}
	}

	got := readAll(t, h, math.MinInt64, math.MaxInt64,
		labels.MustNewMatcher(labels.MatchEqual, "two", "0"), labels.MustNewMatcher(labels.MatchEqual, "three", "1"))
	var want int
	for i := range n {
		if i%2 == 0 && i%3 == 1 {
			want++
			if _, ok := got[labels.FromStrings("__name__", "m", "i", fmt.Sprint(i), "two", "0", "three", "1").String()]; !ok {
				t.Errorf("series i=%d missing", i)
			}
		}
	}
	if len(got) != want {
		t.Fatalf("matched %d series, want %d", len(got), want)
	}
}

// TestReplayChains checks the chains of chunks replay builds in the
// files of the arena: read in place and with pread, each series has the
// same closed chunks, in order, whether replayed from the WAL's samples
// (five) or restored from a checkpoint (three: it joins chunks of one
// block range).
func TestReplayChains(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprint("checkpoint=", checkpoint), func(t *testing.T) { testReplayChains(t, checkpoint) })
	}
}

func testReplayChains(t *testing.T, checkpoint bool) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.ChunkDir = filepath.Join(dir, "chunks_head")
	opts.CheckpointOnClose = checkpoint
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	writeBatches(t, h, 20, 5*opts.ChunkSamples+1, 0, want)
	h = reopen(t, h, opts)
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
	rd := &chunkCopier{arena: h.arena}
	for s := range h.series.all() {
		s.mu.Lock()
		inPlace := s.closedChunks(nil)
		read, err := rd.chain(nil, s.last, int(s.nChunks))
		s.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 5, true: 3}[checkpoint]; len(inPlace) != want || !slices.Equal(inPlace, read) {
			t.Fatalf("series %s: chunks %v in place, %v with pread; want %d", h.labelsOf(s), inPlace, read, want)
		}
		for i := 1; i < len(inPlace); i++ {
			if inPlace[i].mint <= inPlace[i-1].maxt() {
				t.Fatalf("series %s: chunk %d starts at %d, before the one before ends", h.labelsOf(s), i, inPlace[i].mint)
			}
		}
	}
}

func mustExpand(t *testing.T, p index.Postings) []storage.SeriesRef {
	t.Helper()
	refs, err := index.Expand(p)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestCheckpointDecimalChunks checks that a checkpoint joins a decimal
// series' chunks into one in the decimal encoding, but not across a
// block range, and keeps XOR where it is smaller, and that restored
// decimal chunks serve every read and write
// a closed chunk does: queries, the duplicate check at the series' last
// sample, and a late sample inserted into one.
func TestCheckpointDecimalChunks(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.OutOfOrderWindow = math.MaxInt64
	opts.ChunkSamples = 120 // 200 samples are two chunks to join
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	decimal := labels.FromStrings("__name__", "m", "kind", "decimal")
	// Alternating thirds, which XOR encodes best (see TestWriterDensifies).
	thirds := labels.FromStrings("__name__", "m", "kind", "thirds")
	// Decimals whose 51st sample starts a block range.
	crossing := labels.FromStrings("__name__", "m", "kind", "crossing")
	crossAt := opts.BlockRange - 50*15000
	want := map[string][]sample{}
	app := h.Appender(context.Background())
	for j := range 200 {
		ts := int64(j) * 15000
		for _, s := range []struct {
			lset labels.Labels
			t    int64
			v    float64
		}{{decimal, ts, float64(j*j) / 4}, {thirds, ts, []float64{1.0 / 3, 2.0 / 3}[j%2]}, {crossing, crossAt + ts, float64(j) / 8}} {
			if j == 100 {
				continue // a gap for the late sample
			}
			mustAppend(t, app, s.lset, s.t, s.v)
			want[s.lset.String()] = append(want[s.lset.String()], sample{s.t, s.v})
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	encodings := map[string][]chunkenc.Encoding{}
	for s := range h2.series.all() {
		for _, c := range s.closedChunks(nil) {
			encodings[h2.labelsOf(s).Get("kind")] = append(encodings[h2.labelsOf(s).Get("kind")], c.encoding())
		}
		if h2.labelsOf(s).Get("kind") == "crossing" {
			if chunks := s.closedChunks(nil); len(chunks) != 2 || chunks[0].maxt() >= opts.BlockRange || chunks[1].mint != opts.BlockRange {
				t.Errorf("crossing series restored with %d chunks, the first to %d, want two split at %d", len(chunks), chunks[0].maxt(), opts.BlockRange)
			}
		}
	}
	if d := encodings["decimal"]; len(d) != 1 || d[0] != chunkenc.EncDecimal {
		t.Errorf("decimal series restored with chunks %v, want one decimal one", d)
	}
	if d := encodings["crossing"]; len(d) != 2 || d[0] != chunkenc.EncDecimal || d[1] != chunkenc.EncDecimal {
		t.Errorf("crossing series restored with chunks %v, want two decimal ones", d)
	}
	if n := encodings["thirds"]; len(n) != 2 || n[0] != chunkenc.EncXOR || n[1] != chunkenc.EncXOR {
		t.Errorf("thirds restored with chunks %v, want two XOR ones", n)
	}
	assertEqual(t, readAll(t, h2, math.MinInt64, math.MaxInt64, all), want)

	app = h2.Appender(context.Background())
	last := want[decimal.String()][len(want[decimal.String()])-1]
	mustAppend(t, app, decimal, last.t, last.v) // an exact duplicate
	if _, err := app.Append(0, decimal, sampleOf(last.t, last.v+1)); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
		t.Fatalf("another value at the last restored timestamp: %v, want ErrDuplicateSampleForTimestamp", err)
	}
	// Into the first restored chunk's gap: decoded, and encoded anew.
	mustAppend(t, app, decimal, 100*15000, 2500)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, h2, math.MinInt64, math.MaxInt64, all)[decimal.String()]
	if len(got) != 200 || got[100] != (sample{100 * 15000, 2500}) {
		t.Fatalf("after the late sample: %d samples, sample 100 %v", len(got), got[min(100, len(got)-1)])
	}
}
