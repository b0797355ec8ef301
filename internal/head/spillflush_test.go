//go:build unix

package head

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// TestWriteParts checks that writeParts puts every part where write
// would and leaves every other byte of the file as it was: parts joined
// into one write with the bytes between them (written and not yet
// written, past the file's end), parts too far apart for that, and
// parts in two blocks.
func TestWriteParts(t *testing.T) {
	a, rng := fileArena(t, 64<<10, 5)
	random := func(n int) []byte { return randomBytes(rng, n) }
	// Regions of 300 bytes fill the first block and half the second;
	// those of want are written, the last ten of each block are not.
	var regions, want [][]byte
	for range 320 {
		r := a.reserve(300)
		w := make([]byte, 300)
		if len(regions)%218 < 208 {
			w = random(300)
			if err := a.write(r, 0, w); err != nil {
				t.Fatal(err)
			}
		}
		regions, want = append(regions, r), append(want, w)
	}
	if a.blockOf(addrOf(regions[0])) == a.blockOf(addrOf(regions[len(regions)-1])) {
		t.Fatal("the regions are in one block")
	}
	var parts []arenaPart
	for i, r := range regions {
		// Runs of neighbours, regions a few KiB apart, and lone ones.
		if i%7 == 3 || i%40 < 3 || i == 217 || i > 310 {
			off := rng.IntN(200)
			b := random(1 + rng.IntN(100))
			copy(want[i][off:], b)
			parts = append(parts, arenaPart{region: r, off: off, b: b})
		}
	}
	slices.SortFunc(parts, func(x, y arenaPart) int { return cmp.Compare(x.addr(), y.addr()) })
	a.writeParts(parts, nil)
	for _, p := range parts {
		if p.err != nil {
			t.Fatal(p.err)
		}
	}
	for i, r := range regions {
		// Bytes past the file's end, never written, read as zeros.
		got := make([]byte, len(r))
		f, off := a.fileOf(r)
		if err := f.readUpTo(got, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("region %d: the file holds %x, want %x", i, got, want[i])
		}
	}
}

// fileArena returns an arena of file blocks of blockSize bytes, closed
// when the test ends, and a random source seeded with seed.
func fileArena(t *testing.T, blockSize int, seed uint64) (*chunkArena, *rand.Rand) {
	t.Helper()
	a, err := openArena(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	a.fileBlock = blockSize
	return a, rand.New(rand.NewPCG(seed, seed+1))
}

// randomBytes returns n bytes of rng.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func addrOf(b []byte) uintptr { return uintptr(unsafePointer(b)) }

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// TestCopierReadsAhead checks that a copier reads the detached bytes of
// open chunks that lie close together with one read, and that bytes it
// read ahead are not handed out once the block took a write, a single
// one or a joined one, that may have changed them.
func TestCopierReadsAhead(t *testing.T) {
	a, rng := fileArena(t, 1<<20, 7)
	random := func(n int) []byte { return randomBytes(rng, n) }
	var regions, want [][]byte
	for i := range 200 {
		r := a.reserve(300)
		w := make([]byte, 300)
		if i < 100 {
			w = random(300)
			if err := a.write(r, 0, w); err != nil {
				t.Fatal(err)
			}
		}
		regions, want = append(regions, r), append(want, w)
	}
	c := &chunkCopier{arena: a}
	check := func(i int) {
		t.Helper()
		got := make([]byte, 300)
		if err := c.detached(got, regions[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("region %d reads back as %x, want %x", i, got[:16], want[i][:16])
		}
	}
	for i := range 100 {
		check(i)
	}
	if hits := c.ahead[0].hits + c.ahead[1].hits; hits < 90 {
		t.Errorf("%d of 100 reads served by a window, want most", hits)
	}
	// The window that served the last reads holds regions 100 on,
	// not written then.
	w := random(300)
	if err := a.write(regions[101], 0, w); err != nil {
		t.Fatal(err)
	}
	want[101] = w
	check(101)
	check(102)
	var parts []arenaPart
	for i := 103; i < 110; i++ {
		b := random(300)
		want[i] = b
		parts = append(parts, arenaPart{region: regions[i], b: b})
	}
	a.writeParts(parts, nil)
	for _, p := range parts {
		if p.err != nil {
			t.Fatal(p.err)
		}
	}
	for i := 103; i < 110; i++ {
		check(i)
	}
}

// TestWritePartsConcurrent writes parts into regions that lie side by
// side from two goroutines, one with writeParts, whose joined writes
// cover the other's regions, the other with a write each, and checks
// that no write undid another.
func TestWritePartsConcurrent(t *testing.T) {
	a, err := openArena(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	const (
		regions = 1000
		rounds  = 16
		part    = 16
	)
	var owned [2][][]byte
	for i := range regions {
		owned[i%2] = append(owned[i%2], a.reserve(rounds*part))
	}
	pattern := func(g, i, k int) []byte { return bytes.Repeat([]byte{byte(g<<7 | i%8<<4 | k)}, part) }
	var wg sync.WaitGroup
	for g := range owned {
		wg.Go(func() {
			var parts []arenaPart
			for k := range rounds {
				parts = parts[:0]
				for i, r := range owned[g] {
					if g == 1 {
						if err := a.write(r, k*part, pattern(g, i, k)); err != nil {
							t.Error(err)
						}
						continue
					}
					parts = append(parts, arenaPart{region: r, off: k * part, b: pattern(g, i, k)})
				}
				slices.SortFunc(parts, func(x, y arenaPart) int { return cmp.Compare(x.addr(), y.addr()) })
				a.writeParts(parts, nil)
			}
		})
	}
	wg.Wait()
	for g := range owned {
		for i, r := range owned[g] {
			got := make([]byte, len(r))
			f, off := a.fileOf(r)
			if err := f.readUpTo(got, off); err != nil {
				t.Fatal(err)
			}
			for k := range rounds {
				if w := pattern(g, i, k); !bytes.Equal(got[k*part:(k+1)*part], w) {
					t.Fatalf("goroutine %d, region %d, round %d: %x, want %x", g, i, k, got[k*part:(k+1)*part], w)
				}
			}
		}
	}
}

// TestSpillFlushConcurrent appends noisy series, whose open chunks write
// parts out every few samples, from several appenders at once, each with
// series of its own whose regions lie between the others' (one commit
// of all of them reserved the regions, in turn), so that the writes of
// each appender's parts join bytes of the others' regions, which they
// write meanwhile; queries read the series and chunks are cut. It checks
// every sample in queries, then after a restart.
func TestSpillFlushConcurrent(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.ChunkDir = filepath.Join(dir, "chunks_head")
	opts.BlockRange = 200 * 15000 // cuts at 120 samples, then at 200
	opts.CheckpointOnClose = false
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.background.Wait()
	scrapes := storage.WithWholeScrapes(context.Background())
	const (
		appenders = 4
		series    = 200
		samples   = 500
	)
	lsets := make([][]labels.Labels, appenders)
	for g := range lsets {
		for i := range series {
			lsets[g] = append(lsets[g], labels.FromStrings("__name__", "m", "g", fmt.Sprint(g), "i", fmt.Sprint(i)))
		}
	}
	// Every fourth series has a counter's values, the rest random ones.
	value := func(g, i, j int) float64 {
		if i%4 == 0 {
			return float64(j * (i + 1))
		}
		return noisyValue(g*series+i, j)
	}
	want := map[string][]sample{}
	var mu sync.Mutex
	appendOne := func(app storage.Appender, g, i, j int) error {
		ts, v := int64(j)*15000, value(g, i, j)
		if _, err := app.Append(0, lsets[g][i], sampleOf(ts, v)); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		want[lsets[g][i].String()] = append(want[lsets[g][i].String()], sample{ts, v})
		return nil
	}
	spilled := func() (n int) {
		for s := range h.series.all() {
			s.mu.Lock()
			if s.spill != nil {
				n++
			}
			s.mu.Unlock()
		}
		return n
	}
	// Commits of all series, the appenders' in turn, until every noisy
	// one has a region.
	j := 0
	for ; spilled() < appenders*series*3/4; j++ {
		app := h.Appender(scrapes)
		for i := range series {
			for g := range appenders {
				if err := appendOne(app, g, i, j); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			for j := j; j < samples; j++ {
				app := h.Appender(scrapes)
				for i := range series {
					if err := appendOne(app, g, i, j); err != nil {
						t.Error(err)
						return
					}
				}
				if err := app.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var queries sync.WaitGroup
	queries.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			q, err := h.Querier(math.MinInt64, math.MaxInt64)
			if err != nil {
				t.Error(err)
				return
			}
			ss := q.Select(context.Background(), false, nil, all)
			for ss.Next() {
				it := ss.At().Iterator(nil)
				for it.Next() != 0 {
				}
				if err := it.Err(); err != nil {
					t.Error(err)
				}
			}
			q.Close()
		}
	})
	wg.Wait()
	close(done)
	queries.Wait()
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
	for s := range h.series.all() {
		s.mu.Lock()
		if s.state&(seriesSpillQueued|seriesSpillWriting) != 0 {
			t.Errorf("series %d: spill state %b left after the commits", s.ref, s.state)
		}
		s.mu.Unlock()
	}
	checkClosedChunks(t, h)
	h = reopen(t, h, opts)
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
}

// TestCutWhileSpillWriting checks that a chunk cut while a part is being
// written into its region (another commit's flushSpills) does not become
// the region's, which that write could change, and that the region is
// retired, not returned to the arena, so that no other chunk gets it
// meanwhile: for a chunk closed as it is (closeSpilled) and one
// re-encoded as a decimal chunk (densify).
func TestCutWhileSpillWriting(t *testing.T) {
	for _, kind := range []string{"xor", "decimal"} {
		t.Run(kind, func(t *testing.T) {
			opts := DefaultOptions()
			opts.WALDir = t.TempDir()
			opts.ChunkDir = filepath.Join(opts.WALDir, "chunks_head")
			h, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			h.background.Wait()
			lset := labels.FromStrings("__name__", "m")
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[string][]sample{}
			var s *memSeries
			for i := 0; s == nil; i++ {
				v := rng.Float64()
				if kind == "decimal" {
					v = float64(rng.IntN(1000)) / 10
				}
				app := h.Appender(context.Background())
				mustAppend(t, app, lset, int64(i)*15000, v)
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
				want[lset.String()] = append(want[lset.String()], sample{int64(i) * 15000, v})
				for x := range h.series.all() {
					x.mu.Lock()
					if x.spill != nil {
						s = x
					}
					x.mu.Unlock()
				}
			}
			s.mu.Lock()
			region := s.spillRegion()
			s.state |= seriesSpillWriting
			m := &chunkMem{samples: opts.ChunkSamples, arena: h.arena, series: &h.series.cells, dense: &chunkenc.Densifier{}}
			s.cut(m)
			s.state &^= seriesSpillWriting
			closed := s.newest()
			s.mu.Unlock()
			if len(m.retired) != 1 || unsafePointer(m.retired[0]) != unsafePointer(region) {
				t.Fatalf("retired %d regions, want the open chunk's", len(m.retired))
			}
			if unsafePointer(closed.bytes()) == unsafePointer(region) {
				t.Fatal("the closed chunk is in the region being written")
			}
			if kind == "decimal" && closed.encoding() != chunkenc.EncDecimal {
				t.Fatalf("closed a %s chunk, want a decimal one", closed.encoding())
			}
			h.retireChunks(m.retired)
			assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), want)
		})
	}
}
