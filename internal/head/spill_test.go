package head

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// TestOpenChunkSpill appends series whose open chunks spill their
// finished parts into the arena (see spillOpen) and checks every sample
// through queries, a checkpoint and a replay, with the arena in files and
// in memory. The series cover each way a spilled chunk closes: full, cut
// early by a block range (its header rewritten), with a rest too large
// for its region (later parts kept in memory, then put together and
// copied), with late samples that rebuild it, and re-encoded as a
// decimal chunk (see densify).
func TestOpenChunkSpill(t *testing.T) {
	for _, c := range []struct {
		name           string
		files, scrapes bool
	}{
		{"memory", false, false},
		{"files", true, false},
		// A scrape's commits write their parts together (flushSpills).
		{"files/scrapes", true, true},
		{"memory/scrapes", false, true},
	} {
		files := c.files
		ctx := context.Background()
		if c.scrapes {
			ctx = storage.WithWholeScrapes(ctx)
		}
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *Head {
				opts := DefaultOptions()
				opts.WALDir = dir
				if files {
					opts.ChunkDir = filepath.Join(dir, "chunks_head")
				}
				opts.Stripes = 4
				opts.BlockRange = 200_000 // 200 samples: chunks of 120, then 80
				opts.OutOfOrderWindow = 50_000
				// Reopening replays the WAL after the checkpoint taken
				// midway, open chunks included, as after a crash.
				opts.CheckpointOnClose = false
				h, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			h := open()
			rng := rand.New(rand.NewPCG(7, 8))
			values := map[string]func(i int) float64{
				"counter": func(i int) float64 { return float64(i * 3) },
				"decimal": func(i int) float64 { return float64(i%97) / 10 },
				"noisy":   func(int) float64 { return rng.Float64() },
				// Constant for the first third of a chunk, then noisy: the
				// rest overflows the region sized from the first.
				"overflow": func(i int) float64 {
					if i%120 < 40 {
						return 1
					}
					return rng.Float64()
				},
			}
			want := map[string][]sample{}
			lsets := map[string]labels.Labels{}
			for k := range values {
				lsets[k] = labels.FromStrings("__name__", "m", "kind", k)
			}
			spilled := 0
			for i := range 700 {
				app := h.Appender(ctx)
				for k, v := range values {
					ts := int64(i) * 1000
					x := v(i)
					if k == "counter" && i%50 == 49 {
						// A late sample, between the two before: it rebuilds
						// the chunk it goes into.
						ts -= 1500
					}
					mustAppend(t, app, lsets[k], ts, x)
					want[lsets[k].String()] = insertSample(want[lsets[k].String()], sample{ts, x})
				}
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
				for s := range h.series.all() {
					s.mu.Lock()
					if s.spill != nil {
						spilled++
					}
					s.mu.Unlock()
				}
				if i%37 == 0 || i%120 == 119 || i%200 == 199 {
					assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64), want)
				}
				if i == 450 {
					if err := h.Checkpoint(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if spilled == 0 {
				t.Fatal("no open chunk spilled")
			}
			checkClosedChunks(t, h)
			for s := range h.series.all() {
				if h.labelsOf(s).Get("kind") != "decimal" {
					continue
				}
				for _, c := range s.closedChunks(nil) {
					if c.encoding() != chunkenc.EncDecimal {
						t.Errorf("decimal series: a closed %s chunk", c.encoding())
					}
				}
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			// Replay does not spill as it goes; the open chunks it
			// filled spill in the background once it is done.
			h = open()
			defer h.Close()
			assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64), want)
			h.background.Wait()
			for s := range h.series.all() {
				s.mu.Lock()
				if s.open == chunkenc.EncXOR && s.xor.NumSamples() >= 40 && s.spill == nil {
					t.Errorf("%s: an open chunk of %d samples did not spill after replay", h.labelsOf(s), s.xor.NumSamples())
				}
				s.mu.Unlock()
			}
			for i := 700; i < 900; i++ {
				app := h.Appender(ctx)
				for k, v := range values {
					x := v(i)
					mustAppend(t, app, lsets[k], int64(i)*1000, x)
					want[lsets[k].String()] = append(want[lsets[k].String()], sample{int64(i) * 1000, x})
				}
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
				if i%23 == 0 {
					assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64), want)
				}
			}
			checkClosedChunks(t, h)
		})
	}
}

// insertSample adds x to the sorted samples.
func insertSample(samples []sample, x sample) []sample {
	i := len(samples)
	for i > 0 && samples[i-1].t > x.t {
		i--
	}
	samples = append(samples, sample{})
	copy(samples[i+1:], samples[i:])
	samples[i] = x
	return samples
}

// checkClosedChunks decodes every closed chunk of h alone and checks that
// it holds samples in its time range, and that the arena holds those
// chunks and the spill regions, no more.
func checkClosedChunks(t *testing.T, h *Head) {
	t.Helper()
	var closed, spilled int64
	for s := range h.series.all() {
		s.mu.Lock()
		closed += int64(len(s.closedChunks(nil)))
		if s.spill != nil {
			spilled++
		}
		for _, c := range s.closedChunks(nil) {
			if c.encoding() != chunkenc.EncXOR && c.encoding() != chunkenc.EncDecimal {
				continue
			}
			it := floatIterator(c.encoding(), c.bytes())
			n := 0
			for it.Next() {
				if ts, _ := it.At(); ts < c.mint || ts > c.maxt() {
					t.Errorf("%s: sample at %d in a chunk of [%d, %d]", h.labelsOf(s), ts, c.mint, c.maxt())
				}
				n++
			}
			if it.Err() != nil || n == 0 {
				t.Errorf("%s: chunk of [%d, %d]: %d samples, err %v", h.labelsOf(s), c.mint, c.maxt(), n, it.Err())
			}
		}
		s.mu.Unlock()
	}
	h.arena.mu.Lock()
	chunks, open := h.arena.chunks, h.arena.open
	h.arena.mu.Unlock()
	if chunks != closed+spilled || open != spilled {
		t.Errorf("arena counts %d chunks, %d of them open; the series hold %d closed and %d open", chunks, open, closed, spilled)
	}
	if got := h.Stats().Chunks; got != closed {
		t.Errorf("Stats().Chunks = %d, want the %d closed chunks", got, closed)
	}
}

// TestSpillSkipsShortParts checks that an open chunk writes out a part
// only when its memory is nearly full: a constant series writes none in
// half a chunk, a noisy one several, its memory grown at most twice.
func TestSpillSkipsShortParts(t *testing.T) {
	opts := DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.ChunkDir = filepath.Join(opts.WALDir, "chunks_head")
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// spillReplayed, started by Open, spills any open chunk it finds,
	// whether replay or an appender filled it.
	h.background.Wait()
	constant, noisy := labels.FromStrings("__name__", "constant"), labels.FromStrings("__name__", "noisy")
	rng := rand.New(rand.NewPCG(1, 2))
	n := opts.ChunkSamples / 2
	for i := range n {
		app := h.Appender(context.Background())
		mustAppend(t, app, constant, int64(i)*15000, 42)
		mustAppend(t, app, noisy, int64(i)*15000, rng.Float64())
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for s := range h.series.all() {
		s.mu.Lock()
		x := &s.xor
		name := h.labelsOf(s).Get("__name__")
		switch {
		case name == "constant" && x.Detached() != 0:
			t.Errorf("constant series: %d bytes written out in %d samples", x.Detached(), n)
		case name == "noisy" && (s.spill == nil || len(x.Bytes())+x.Room() > 128):
			t.Errorf("noisy series: %d bytes written out, %d in memory of %d", x.Detached(), len(x.Bytes()), len(x.Bytes())+x.Room())
		}
		s.mu.Unlock()
	}
}

// TestSpillKeepsMemorySmall checks what an open chunk keeps in memory
// between its parts: its first allocation for a counter, at most two
// growths of it for random values, and, after replay, which fills open
// chunks without writing parts, the first allocation again.
func TestSpillKeepsMemorySmall(t *testing.T) {
	opts := DefaultOptions()
	opts.CheckpointOnClose = false // replay the samples from the WAL
	opts.WALDir = t.TempDir()
	opts.ChunkDir = filepath.Join(opts.WALDir, "chunks_head")
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	counter, noisy := labels.FromStrings("__name__", "counter"), labels.FromStrings("__name__", "noisy")
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range opts.ChunkSamples * 2 / 3 {
		app := h.Appender(context.Background())
		mustAppend(t, app, counter, int64(i)*15000, float64(i*1000+rng.IntN(1000)))
		mustAppend(t, app, noisy, int64(i)*15000, rng.Float64())
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(h *Head, when string, noisyLimit int) {
		t.Helper()
		for s := range h.series.all() {
			s.mu.Lock()
			x := &s.xor
			name, size := h.labelsOf(s).Get("__name__"), len(x.Bytes())+x.Room()
			limit := 64
			if name == "noisy" {
				limit = noisyLimit
			}
			if s.spill == nil || size > limit {
				t.Errorf("%s: %s series: %d bytes written out, %d in memory of %d", when, name, x.Detached(), len(x.Bytes()), size)
			}
			s.mu.Unlock()
		}
	}
	check(h, "after appends", 128)
	h = reopen(t, h, opts)
	h.background.Wait()
	check(h, "after replay", 64)
}

// TestSamplesAtCut checks the estimate of an open chunk's samples at its
// cut that sizes the region its parts are written to.
func TestSamplesAtCut(t *testing.T) {
	const hour = 3600 * 1000
	for _, c := range []struct {
		name                 string
		blockRange, headMint int64
		interval             int64
		n, want              int
	}{
		{"15s from the range's start", 2 * hour, 0, 15000, 10, 240},
		{"15s from 90 minutes in", 2 * hour, 3 * hour / 2, 15000, 10, 120},
		{"60s from the range's start", 2 * hour, 0, 60000, 10, 120},
		{"60s, a negative range", 2 * hour, -2 * hour, 60000, 30, 120},
		{"no block range", 0, 0, 60000, 10, 240},
		{"one sample", 2 * hour, 0, 60000, 1, 240},
	} {
		s := &memSeries{maxt: math.MinInt64}
		for i := range c.n {
			t := c.headMint + int64(i)*c.interval
			s.xor.Append(s.maxt, 1, t, 1)
			s.setNewest(t, i == 0)
		}
		m := &chunkMem{samples: 240, blockRange: c.blockRange}
		if got := s.samplesAtCut(m); got != c.want {
			t.Errorf("%s: %d samples at the cut, want %d", c.name, got, c.want)
		}
	}
}
