package head

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal"
)

// TestReplayCheckpointOverlap replays the layout a checkpoint written
// while samples come in leaves behind: samples logged after the segment
// the checkpoint starts, which the checkpoint holds too because they
// were applied before it read their series; then, with a window, late
// samples older than the newest the checkpoint holds, which it does not;
// then newer ones. Every sample comes back once, of every kind, and
// replay finds those the checkpoint holds without inserting them again.
func TestReplayCheckpointOverlap(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions()
			opts.WALDir = filepath.Join(dir, "wal")
			opts.ChunkDir = filepath.Join(dir, "chunks_head")
			opts.Stripes = 16
			// Several closed chunks a series.
			opts.ChunkSamples = 40
			opts.CheckpointOnClose = false
			rng := rand.New(rand.NewPCG(3, 4))
			var held, missing []int
			for i := 200; i < 400; i++ {
				if late && i%7 == 3 {
					missing = append(missing, i)
				} else {
					held = append(held, i)
				}
			}
			if late {
				opts.OutOfOrderWindow = 1 << 40
				rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
				rng.Shuffle(len(missing), func(i, j int) { missing[i], missing[j] = missing[j], missing[i] })
			}
			h, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			appendAny(t, h, shuffled(rng, 0, 200, 1))
			h.checkpointMu.Lock()
			n, walBytes, err := h.cutCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			appendAny(t, h, held)
			if err := h.writeCheckpointAt(n, walBytes, checkpointKind{full: true}); err != nil {
				t.Fatal(err)
			}
			h.checkpointMu.Unlock()
			appendAny(t, h, missing)
			appendAny(t, h, shuffled(rng, 400, 450, 1))
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			want := wantAny(450)
			for _, workers := range []int{1, 3} {
				opts.ReplayWorkers = workers
				h, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				assertSameAny(t, readAny(t, h, all), want)
				// All but the newest the checkpoint holds, which
				// is found without a chunk's decoding.
				if got, want := h.Stats().ReplayedHeld, uint64(len(anySeries)*(len(held)-1)); got != want {
					t.Errorf("workers=%d: replay found %d samples in the checkpoint, want %d", workers, got, want)
				}
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestDropHeld checks runs of samples against a series' chunks: those it
// holds at their time are dropped (counted if another value), those it
// does not are kept, before, between, inside and after its chunks, of
// every encoding.
func TestDropHeld(t *testing.T) {
	m := testChunkMem(t, 10)
	hist := func(i int) *histogram.Histogram { return testHistogram(i) }
	fhist := func(i int) *histogram.FloatHistogram { return testHistogram(i).ToFloat(nil) }
	at := func(i int) int64 { return int64(i) * 1000 }
	for _, tc := range []struct {
		name string
		// add appends the series' ith sample; sample returns it.
		add    func(s *memSeries, i int)
		sample func(i int) lateSample
		other  func(i int) lateSample // another value at i's time
	}{
		{"xor", func(s *memSeries, i int) { s.append(at(i), float64(i), m) },
			func(i int) lateSample { return lateSample{t: at(i), v: float64(i)} },
			func(i int) lateSample { return lateSample{t: at(i), v: -1} }},
		{"histogram", func(s *memSeries, i int) { s.appendHistogram(at(i), hist(i), m) },
			func(i int) lateSample { return lateSample{t: at(i), h: hist(i)} },
			func(i int) lateSample { return lateSample{t: at(i), h: hist(i + 1)} }},
		{"float histogram", func(s *memSeries, i int) { s.appendFloatHistogram(at(i), fhist(i), m) },
			func(i int) lateSample { return lateSample{t: at(i), fh: fhist(i)} },
			func(i int) lateSample { return lateSample{t: at(i), fh: fhist(i + 1)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemSeries(1)
			// Samples at 10..39 and 50..64 (a gap), the last five in
			// the open chunk.
			for i := 10; i < 40; i++ {
				tc.add(s, i)
			}
			for i := 50; i < 65; i++ {
				tc.add(s, i)
			}
			between := tc.sample(26)
			between.t++
			run := []lateSample{
				tc.sample(5),  // before all chunks
				tc.sample(10), // the first
				tc.sample(10), // again
				tc.other(11),  // another value
				tc.sample(25),
				between,       // inside a chunk, between two samples
				tc.sample(45), // in the gap
				tc.other(50),
				tc.sample(62), // in the open chunk
				tc.sample(70), // after all
			}
			var hc heldChecker
			kept, conflicts, err := s.dropHeld(run, nil, &hc)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, x := range kept {
				got = append(got, x.t)
			}
			if want := []int64{at(5), at(26) + 1, at(45), at(70)}; !slices.Equal(got, want) {
				t.Errorf("kept %v, want %v", got, want)
			}
			if conflicts != 2 {
				t.Errorf("%d conflicts, want 2", conflicts)
			}
		})
	}
}

// TestDropHeldDecimal checks a run against a restored decimal chunk.
func TestDropHeldDecimal(t *testing.T) {
	m := testChunkMem(t, 1000)
	xor := chunkenc.NewXORChunk()
	for i := range 100 {
		xor.Append(int64(i)*15_000, float64(i*i%1000)/10)
	}
	var dense chunkenc.Densifier
	data, ok := dense.Densify(xor.Bytes())
	if !ok {
		t.Fatal("not densified")
	}
	var buf []byte
	r := newMemSeries(2)
	r.last, buf = storeChunks(m.arena, buf, []chunkenc.Meta{{Data: data, MinT: 0, MaxT: 99 * 15_000, Enc: chunkenc.EncDecimal}}, nil)
	r.nChunks, r.maxt = 1, 99*15_000
	run := []lateSample{{t: 30 * 15_000, v: float64(30*30%1000) / 10}, {t: 30*15_000 + 1, v: 0}, {t: 31 * 15_000, v: 9}}
	var hc heldChecker
	kept, conflicts, err := r.dropHeld(run, nil, &hc)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].t != 30*15_000+1 || conflicts != 1 {
		t.Errorf("kept %v with %d conflicts, want the sample between two and one conflict", kept, conflicts)
	}
}

// testChunkMem returns a chunkMem cutting chunks at samples, over an
// arena in memory, freed when the test ends.
func testChunkMem(t *testing.T, samples int) *chunkMem {
	arena, series := &chunkArena{}, new(cellPool)
	t.Cleanup(func() {
		arena.close()
		series.close()
	})
	return &chunkMem{samples: samples, arena: arena, series: series}
}

// TestEachRun groups deferred samples by series, each series' in log
// order, also where refs are too large for the sort keys.
func TestEachRun(t *testing.T) {
	for _, big := range []storage.SeriesRef{7, runMaxRef + 1} {
		refs := []storage.SeriesRef{5, big, 5, 3, big, 5}
		var w replayWorker
		got := map[storage.SeriesRef][]int64{}
		var order []storage.SeriesRef
		w.eachRun(len(refs), func(i int) storage.SeriesRef { return refs[i] },
			func(i int) lateSample { return lateSample{t: int64(i)} },
			func(ref storage.SeriesRef, run []lateSample) {
				order = append(order, ref)
				for _, x := range run {
					got[ref] = append(got[ref], x.t)
				}
			})
		want := map[storage.SeriesRef][]int64{5: {0, 2, 5}, big: {1, 4}, 3: {3}}
		if len(order) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ref %d: runs %v in order %v, want %v", big, got, order, want)
		}
	}
}

// TestReplayGroupsInLogOrder replays a log that holds a sample of every
// series before the next of any, as remote-write leaves it, with more
// samples than a worker groups at once (replayGroupMax): each series
// must get its samples in log order, so that of two at one time the
// first logged is kept, also where a histogram at the time of a float
// was logged after it.
func TestReplayGroupsInLogOrder(t *testing.T) {
	const series, rounds = 300, 1000
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointOnClose = false
	opts.ReplayWorkers = 1
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]storage.SeriesRef, series)
	app := h.Appender(context.Background())
	for i := range refs {
		if refs[i], err = app.Append(0, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), storage.Sample{T: 0, V: 0}); err != nil {
			t.Fatal(err)
		}
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
	var buf []record.RefSample
	for r := 1; r <= rounds; r++ {
		buf = buf[:0]
		for i, ref := range refs {
			buf = append(buf, record.RefSample{Ref: ref, T: int64(r) * 1000, V: float64(i * r)})
		}
		recs := [][]byte{record.EncodeSamples(nil, buf)}
		// The same times again with other values, as writers that lost
		// a race log them: replay must drop them again.
		for i := range buf {
			buf[i].V = -1
		}
		recs = append(recs, record.EncodeSamples(nil, buf))
		if r == rounds {
			recs = append(recs, record.EncodeHistogramSamples(nil, []record.RefHistogramSample{{Ref: refs[0], T: int64(r) * 1000, H: testHistogram(1)}}))
		}
		if err := w.Log(recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	h, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got, want := h.Stats().ReplayedSamples, uint64(series*(rounds+1)); got != want {
		t.Errorf("replayed %d samples, want %d", got, want)
	}
	got := readAny(t, h, all)
	for i := range refs {
		ss := got[labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)).String()]
		if len(ss) != rounds+1 {
			t.Fatalf("series %d: %d samples, want %d", i, len(ss), rounds+1)
		}
		for r, s := range ss {
			if s.t != int64(r)*1000 || s.fh != nil || s.v != float64(i*r) {
				t.Fatalf("series %d: sample %d is %+v, want (%d, %d)", i, r, s, r*1000, i*r)
			}
		}
	}
}
