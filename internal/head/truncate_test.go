package head

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

const testRange = 1000 // ms: a small block range, so that tests cross many

// openRangeHead opens a head with block range testRange that keeps its
// closed chunks in files, as the store does.
func openRangeHead(t *testing.T, dir string) *Head {
	t.Helper()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.ChunkDir = filepath.Join(dir, "chunks_head")
	opts.Stripes = 16
	opts.BlockRange = testRange
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestChunksCutAtBlockRange(t *testing.T) {
	h := openRangeHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "m")
	app := h.Appender(context.Background())
	// 10 samples per range, far fewer than a chunk holds.
	for ts := int64(-1000); ts < 3000; ts += 100 {
		mustAppend(t, app, lset, ts, float64(ts))
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	s := h.series.getByHash(lset.Hash(), lset)
	s.mu.Lock()
	defer s.mu.Unlock()
	chunks := s.closedChunks(nil)
	if len(chunks) != 3 {
		t.Fatalf("%d closed chunks, want 3 (one per range before the last)", len(chunks))
	}
	for i, c := range chunks {
		if lo := int64(i-1) * testRange; c.mint != lo || c.maxt() != lo+testRange-100 {
			t.Errorf("chunk %d spans [%d, %d], want [%d, %d]", i, c.mint, c.maxt(), lo, lo+testRange-100)
		}
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	h := openRangeHead(t, dir)
	old := labels.FromStrings("__name__", "old")       // only before 2000
	live := labels.FromStrings("__name__", "live")     // throughout
	reborn := labels.FromStrings("__name__", "reborn") // before 1000 and after 3000
	app := h.Appender(context.Background())
	for ts := int64(0); ts < 4000; ts += 100 {
		if ts < 2000 {
			mustAppend(t, app, old, ts, 1)
		}
		mustAppend(t, app, live, ts, float64(ts))
		if ts < 1000 {
			mustAppend(t, app, reborn, ts, 2)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	arenaBefore := h.Stats().ChunkBytes

	// spillReplayed, run after Open, is a reader: removed series are
	// freed after it.
	h.background.Wait()
	st := h.Truncate(2000)
	if st.SeriesRemoved != 2 || st.Chunks != 2+2+1 {
		t.Errorf("truncate: %+v, want 2 series and 5 chunks removed", st)
	}
	if n := h.Stats().Series; n != 1 {
		t.Errorf("%d series after truncate, want 1", n)
	}
	// The series removed and the open chunks dropped free their memory.
	if _, n := h.series.cells.bytes(); n != 1 {
		t.Errorf("%d series cells after truncate, want 1: live", n)
	}
	if _, n := h.arena.cells.bytes(); n != 1 {
		t.Errorf("%d chunk cells after truncate, want 1: live's open chunk", n)
	}
	got := readAll(t, h, 0, 10000, all)
	if len(got) != 1 || len(got[live.String()]) != 20 || got[live.String()][0].t != 2000 {
		t.Errorf("after truncate read %v, want live from 2000 only", got)
	}
	names, _, _ := mustQuerier(t, h).LabelValues(context.Background(), "__name__", nil)
	if fmt.Sprint(names) != "[live]" {
		t.Errorf("metric names after truncate: %v, want [live]", names)
	}

	app = h.Appender(context.Background())
	if _, err := app.Append(0, live, sampleOf(1999, 0)); !errors.Is(err, storage.ErrOutOfBounds) {
		t.Errorf("append before truncation point: %v, want ErrOutOfBounds", err)
	}
	mustAppend(t, app, reborn, 4000, 3)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if h.Stats().ChunkBytes > arenaBefore {
		t.Errorf("arena grew from %d to %d bytes", arenaBefore, h.Stats().ChunkBytes)
	}
	want := readAll(t, h, 0, 10000, all)
	if len(want[reborn.String()]) != 1 {
		t.Fatalf("reborn series: %v", want[reborn.String()])
	}

	// What a restart restores: from the WAL, then from a checkpoint.
	if err := h.wal.Close(); err != nil {
		t.Fatal(err)
	}
	h = openRangeHead(t, dir)
	h.Truncate(2000)
	assertEqual(t, readAll(t, h, 0, 10000, all), want)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openRangeHead(t, dir)
	defer h.Close()
	assertEqual(t, readAll(t, h, 0, 10000, all), want)
}

func mustQuerier(t *testing.T, h *Head) *querier {
	q, err := h.Querier(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q.(*querier)
}

// TestTruncateFreesArena checks that the memory of dropped chunks goes
// back to the system, and not before the queries that could read it end.
func TestTruncateFreesArena(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testTruncateFreesArena(t, "") })
	t.Run("files", func(t *testing.T) { testTruncateFreesArena(t, filepath.Join(t.TempDir(), "chunks")) })
}

func testTruncateFreesArena(t *testing.T, chunkDir string) {
	opts := DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.ChunkDir = chunkDir
	opts.Stripes = 16
	opts.BlockRange = testRange
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Small file blocks, so that the test fills several per range.
	h.arena.fileBlock = 64 << 10
	// Enough series and ranges to fill several arena blocks per range.
	// The values are ones XOR encodes best, so that each range's chunks
	// take as much room closed as open (see memSeries.densify).
	const nseries = 3000
	rng := rand.New(rand.NewPCG(1, 2))
	var ts int64
	appendRange := func() {
		app := h.Appender(context.Background())
		for end := ts + testRange; ts < end; ts += 10 {
			for i := range nseries {
				mustAppend(t, app, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), ts, rng.Float64())
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		appendRange()
	}
	peak := h.Stats().ChunkBytes

	q := mustQuerier(t, h)
	ss := q.Select(context.Background(), false, nil, all)
	truncated := make(chan TruncateStats)
	go func() { truncated <- h.Truncate(3 * testRange) }()
	for h.appendFloor.Load() != 3*testRange {
		runtime.Gosched()
	}
	// The query started before the truncation: it reads everything.
	var it promchunkenc.Iterator
	n := 0
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() == promchunkenc.ValFloat {
			n++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	if n != nseries*4*testRange/10 {
		t.Errorf("query read %d samples, want %d", n, nseries*4*testRange/10)
	}
	select {
	case <-truncated:
		t.Fatal("Truncate returned while a query that reads what it drops was open")
	default:
	}
	if got := h.Stats().ChunkBytes; got != peak {
		t.Errorf("arena freed %d bytes while a query could read them", peak-got)
	}
	q.Close()
	st := <-truncated
	if st.ArenaBytesFree == 0 {
		t.Errorf("truncate freed nothing: %+v", st)
	}
	// Chunks are retired in batches; all of them must be freed.
	if st.Chunks <= retireBatch {
		t.Errorf("truncate dropped %d chunks, want more than a batch of %d", st.Chunks, retireBatch)
	}
	if got := h.Stats().ChunkBytes; got > peak/2 {
		t.Errorf("arena holds %d of %d bytes after truncating 3 of 4 ranges", got, peak)
	}
	if chunkDir == "" {
		return
	}
	if got := h.Stats().ChunkFileBytes; got != h.Stats().ChunkBytes {
		t.Errorf("%d bytes in chunk files, want all %d", got, h.Stats().ChunkBytes)
	}
	var size int64
	entries, err := os.ReadDir(chunkDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	// A file ends at the last byte written to it: the region of a spilled
	// open chunk, reserved at its end, may end beyond.
	if held := h.Stats().ChunkFileBytes; size > held || size < held-int64(len(entries))*maxArenaChunk {
		t.Errorf("chunk files left take %d bytes in %d files, want the %d the head holds", size, len(entries), held)
	}
}

// TestTruncateConcurrent runs appends, queries and truncations at once;
// under -race it checks their synchronisation, and every sample a query
// reads must be one that was written (v == t).
func TestTruncateConcurrent(t *testing.T) {
	h := openRangeHead(t, t.TempDir())
	defer h.Close()
	const nseries = 200
	concurrently(t, h, func(ts int64) []labels.Labels {
		var lsets []labels.Labels
		for i := range nseries {
			// Some series stop early, so that truncation removes them.
			if i%4 == 0 && ts > 5*testRange {
				continue
			}
			lsets = append(lsets, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)))
		}
		return lsets
	}, 20*testRange, func(labels.Labels, int64) bool { return true })
	// Every series still has its newest samples.
	got := readAll(t, h, 0, 1<<62, all)
	if len(got) != nseries*3/4 {
		t.Errorf("%d series at the end, want %d", len(got), nseries*3/4)
	}
}

// TestTruncateChurn runs appends, queries and truncations at once over
// series that churn: each lives for one block range, with the range in
// its labels, so that truncations remove series while others are created
// in the memory freed. A query must read each series' own samples under
// its own labels; under -race it also checks that freeing waits for the
// appenders and readers that may hold a series.
func TestTruncateChurn(t *testing.T) {
	h := openRangeHead(t, t.TempDir())
	defer h.Close()
	const nseries = 100
	removed := concurrently(t, h, func(ts int64) []labels.Labels {
		lsets := make([]labels.Labels, nseries)
		for i := range lsets {
			lsets[i] = labels.FromStrings("__name__", "m", "i", fmt.Sprint(i), "range", fmt.Sprint(ts/testRange))
		}
		return lsets
	}, 30*testRange, func(lset labels.Labels, ts int64) bool { return fmt.Sprint(ts/testRange) == lset.Get("range") })
	// The last two ranges' series remain, with all their samples.
	removed += h.Truncate(28 * testRange).SeriesRemoved
	if removed != 28*nseries {
		t.Errorf("truncations removed %d series, want the %d of the first 28 ranges", removed, 28*nseries)
	}
	got := readAll(t, h, 0, 1<<62, all)
	if len(got) != 2*nseries {
		t.Errorf("%d series at the end, want %d", len(got), 2*nseries)
	}
	for k, s := range got {
		if len(s) != testRange/50 {
			t.Errorf("%s: %d samples, want %d", k, len(s), testRange/50)
		}
	}
}

// concurrently appends a sample (ts, ts) to each series seriesAt(ts)
// gives, every 50 ms of [0, end), a batch each, while two goroutines
// query every series in a loop and another truncates all but the last
// block range. Each sample read must have v == t and satisfy ok with its
// series' labels. It returns the series the truncations removed.
func concurrently(t *testing.T, h *Head, seriesAt func(ts int64) []labels.Labels, end int64, ok func(lset labels.Labels, ts int64) bool) int {
	t.Helper()
	var wg sync.WaitGroup
	done := make(chan struct{})
	var appendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for ts := int64(0); ts < end; ts += 50 {
			app := h.Appender(context.Background())
			for _, lset := range seriesAt(ts) {
				if _, err := app.Append(0, lset, sampleOf(ts, float64(ts))); err != nil {
					appendErr = err
					return
				}
			}
			if err := app.Commit(); err != nil {
				appendErr = err
				return
			}
			// Let truncations and queries in between batches.
			runtime.Gosched()
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var it promchunkenc.Iterator
			for {
				select {
				case <-done:
					return
				default:
				}
				q, _ := h.Querier(0, 1<<62)
				ss := q.Select(context.Background(), false, nil, all)
				for ss.Next() {
					lset := ss.At().Labels()
					it = ss.At().Iterator(it)
					for it.Next() == promchunkenc.ValFloat {
						if ts, v := it.At(); float64(ts) != v || !ok(lset, ts) {
							t.Errorf("read (%d, %v) from %s: not a sample written to it", ts, v, lset)
						}
					}
				}
				q.Close()
			}
		}()
	}
	removed := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if maxt := h.MaxTime(); maxt > 2*testRange {
				removed += h.Truncate(rangeStart(maxt, testRange) - testRange).SeriesRemoved
			}
		}
	}()
	wg.Wait()
	if appendErr != nil {
		t.Fatal(appendErr)
	}
	return removed
}

// TestTruncateKeepsSeriesOfOpenAppender checks that a series left empty by
// a truncation is not removed while an appender that took it before is
// still to commit to it.
func TestTruncateKeepsSeriesOfOpenAppender(t *testing.T) {
	dir := t.TempDir()
	h := openRangeHead(t, dir)
	lset := labels.FromStrings("__name__", "m")
	app := h.Appender(context.Background())
	mustAppend(t, app, lset, 100, 1)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}

	app = h.Appender(context.Background())
	mustAppend(t, app, lset, 5000, 2)
	truncated := make(chan TruncateStats)
	go func() { truncated <- h.Truncate(2000) }()
	// Wait until the truncation found the series empty.
	s := h.series.getByHash(lset.Hash(), lset)
	for doomed := false; !doomed; {
		runtime.Gosched()
		s.mu.Lock()
		doomed = s.removal() == seriesDoomed
		s.mu.Unlock()
	}
	mustAppend(t, app, lset, 5100, 3)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if st := <-truncated; st.SeriesRemoved != 0 {
		t.Errorf("truncate removed %d series, want none", st.SeriesRemoved)
	}
	want := map[string][]sample{lset.String(): {{5000, 2}, {5100, 3}}}
	assertEqual(t, readAll(t, h, 0, 10000, all), want)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openRangeHead(t, dir)
	defer h.Close()
	assertEqual(t, readAll(t, h, 0, 10000, all), want)
}

// TestTruncateChain checks what a truncation leaves of a series' chain
// of chunks: the chunks outside the range, in order, the chunks kept
// before the range where they were and those after it copied anew after
// them, and nothing else in the arena once the dropped chunks and the old
// copies are released.
func TestTruncateChain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lo, hi   int64
		want     []int64 // the mint of each chunk kept
		relinked int     // chunks copied anew
	}{
		{"oldest", math.MinInt64, 399, []int64{400, 500, 600}, 0},
		{"newest", 400, math.MaxInt64, []int64{0, 100, 200, 300}, 0},
		{"middle", 200, 399, []int64{0, 100, 400, 500, 600}, 3},
		{"all", math.MinInt64, math.MaxInt64, nil, 0},
		{"none", 1000, 2000, []int64{0, 100, 200, 300, 400, 500, 600}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arena, err := openArena(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer arena.close()
			s := newMemSeries(1)
			var buf []byte
			for i := range int64(7) {
				var p *byte
				p, buf = storeChunk(arena, buf, []byte{byte(i), 1, 2}, i*100, i*100+99, chunkenc.EncXOR, s.last)
				s.addChunk(p)
			}
			d := chunkDropper{lo: tc.lo, hi: tc.hi, rd: chunkCopier{arena: arena}}
			mint := d.truncate(s)
			var got []int64
			for _, c := range s.closedChunks(nil) {
				got = append(got, c.mint)
				if c.bytes()[0] != byte(c.mint/100) {
					t.Errorf("chunk of %d holds %v", c.mint, c.bytes())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("chunks kept start at %v, want %v", got, tc.want)
			}
			if wantMint := int64(math.MaxInt64); len(tc.want) > 0 && mint != tc.want[0] || len(tc.want) == 0 && mint != wantMint {
				t.Errorf("oldest sample left at %d, want the first chunk's", mint)
			}
			if dropped := 7 - len(tc.want); d.chunks != dropped || len(d.retired) != dropped+tc.relinked {
				t.Errorf("%d chunks dropped and %d regions retired, want %d and %d", d.chunks, len(d.retired), dropped, dropped+tc.relinked)
			}
			for _, data := range d.retired {
				arena.release(data)
			}
			if n := arena.liveChunks(); n != int64(len(tc.want)) {
				t.Errorf("%d chunks in the arena, want %d", n, len(tc.want))
			}
		})
	}
}
