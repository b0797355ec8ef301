package head

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/vfs"
	"github.com/strata-db/strata/internal/vfs/faultfs"
)

// copyTree copies the files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o777)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeltaCheckpoints writes a head through full and delta checkpoints,
// some written while appends go on, with series that come and go, lag
// the others of their group of marks, take late samples older than what
// the checkpoints before hold, and hold native histograms, and restarts a
// copy of its WAL after each checkpoint as a crash would leave it: every
// sample comes back, once.
func TestDeltaCheckpoints(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.WALDir = filepath.Join(dir, "wal")
	opts.ChunkDir = filepath.Join(dir, "chunks_head")
	opts.Stripes = 16
	// Several closed chunks a series, joined into decimal ones.
	opts.ChunkSamples = 40
	opts.OutOfOrderWindow = 1 << 40
	opts.CheckpointOnClose = false
	opts.CheckpointMinBytes = 1 << 62
	// The ring of exemplars wraps between checkpoints.
	opts.MaxExemplars = 40
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Few groups, so that series share them.
	h.marks = newDeltaMarks(3)

	type floatSeries struct {
		lset     labels.Labels
		from, to int
		lag      int64
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var floats []floatSeries
	for j := range 24 {
		from := rng.IntN(80)
		floats = append(floats, floatSeries{
			lset: labels.FromStrings("__name__", "g", "j", fmt.Sprint(j)),
			from: from, to: from + 20 + rng.IntN(120),
			lag: int64(rng.IntN(3)) * 20_000,
		})
	}
	var (
		mu     sync.Mutex // guards the rest while appends run beside a checkpoint
		want   = map[string][]sample{}
		traces []string // "j trace@ts" of the exemplars appended, oldest first
		held   []struct {
			s    sample
			lset labels.Labels
		}
		anyDone  []int
		anyLater []int
	)
	round := func(r int) {
		mu.Lock()
		defer mu.Unlock()
		app := h.Appender(t.Context())
		for _, f := range floats {
			if r < f.from || r >= f.to {
				continue
			}
			s := sample{int64(r)*15_000 - f.lag, float64(rng.IntN(1000)) / 8}
			if rng.IntN(8) == 0 {
				held = append(held, struct {
					s    sample
					lset labels.Labels
				}{s, f.lset})
				continue
			}
			mustAppend(t, app, f.lset, s.t, s.v)
			want[f.lset.String()] = append(want[f.lset.String()], s)
			if rng.IntN(3) == 0 {
				e := exemplarAt(s.t, fmt.Sprint(r))
				if _, err := app.AppendExemplar(0, f.lset, e); err != nil {
					t.Fatal(err)
				}
				traces = append(traces, fmt.Sprintf("%s %d@%d", f.lset.Get("j"), r, s.t))
			}
		}
		// Late samples, some older than the checkpoints before hold.
		if len(held) > 0 && rng.IntN(3) == 0 {
			rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
			n := 1 + rng.IntN(len(held))
			for _, x := range held[:n] {
				mustAppend(t, app, x.lset, x.s.t, x.s.v)
				want[x.lset.String()] = append(want[x.lset.String()], x.s)
			}
			held = held[n:]
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		var order []int
		if rng.IntN(6) == 0 {
			anyLater = append(anyLater, r)
		} else {
			order = append(order, r)
		}
		if rng.IntN(4) == 0 {
			order, anyLater = append(order, anyLater...), nil
		}
		appendAny(t, h, order)
		anyDone = append(anyDone, order...)
	}
	deltas := 0
	restart := func(r int) {
		mu.Lock()
		defer mu.Unlock()
		copied := t.TempDir()
		copyTree(t, opts.WALDir, filepath.Join(copied, "wal"))
		o := opts
		o.WALDir, o.ChunkDir = filepath.Join(copied, "wal"), filepath.Join(copied, "chunks_head")
		_, ds, _, err := checkpointChain(vfs.OS{}, o.WALDir)
		if err != nil {
			t.Fatal(err)
		}
		deltas = max(deltas, len(ds))
		if got, want := exemplarTraces(t, h), slices.Sorted(slices.Values(traces[max(0, len(traces)-opts.MaxExemplars):])); !slices.Equal(got, want) {
			t.Errorf("round %d: exemplars %q in the head, want %q", r, got, want)
		}
		for _, workers := range []int{1, 3} {
			o.ReplayWorkers = workers
			h2, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			for k, s := range want {
				slices.SortFunc(s, func(a, b sample) int { return int(a.t - b.t) })
				want[k] = s
			}
			got := readAll(t, h2, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "g"))
			if !equalSamples(got, want) {
				t.Errorf("round %d, %d deltas, %d workers: float series differ after restart", r, len(ds), workers)
				assertEqual(t, got, want)
			}
			wantAnyDone := map[string][]anySample{}
			done := slices.Sorted(slices.Values(anyDone))
			for k, lset := range anySeries {
				for _, i := range done {
					_, as := anySampleAt(k, i)
					wantAnyDone[lset.String()] = append(wantAnyDone[lset.String()], as)
				}
			}
			assertSameAny(t, readAny(t, h2, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "f|h|fh|mixed")), wantAnyDone)
			if got, want := exemplarTraces(t, h2), slices.Sorted(slices.Values(traces[max(0, len(traces)-o.MaxExemplars):])); !slices.Equal(got, want) {
				t.Errorf("round %d, %d deltas: exemplars %q after restart, want %q", r, len(ds), got, want)
			}
			if err := h2.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for r := 0; r < 160; r++ {
		round(r)
		if r%4 != 3 {
			continue
		}
		if r%8 == 3 {
			// The next round's appends beside the checkpoint's pass.
			r++
			var wg sync.WaitGroup
			wg.Go(func() { round(r) })
			if err := h.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
		} else if err := h.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		restart(r)
	}
	restart(160)
	if deltas < 3 {
		t.Fatalf("at most %d deltas were replayed, want several", deltas)
	}
	names := strings.Join(walEntries(t, opts.WALDir), " ")
	if !strings.Contains(names, deltaSuffix) {
		t.Errorf("WAL directory holds %s, no delta", names)
	}
}

// exemplarTraces returns "j trace@ts" of every exemplar the head holds,
// sorted.
func exemplarTraces(t *testing.T, h *Head) []string {
	t.Helper()
	q, _ := h.ExemplarQuerier(t.Context())
	res, err := q.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "g")})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		for _, e := range r.Exemplars {
			out = append(out, fmt.Sprintf("%s %s@%d", r.SeriesLabels.Get("j"), e.Labels.Get("trace_id"), e.Ts))
		}
	}
	slices.Sort(out)
	return out
}

func equalSamples(a, b map[string][]sample) bool {
	if len(a) != len(b) {
		return false
	}
	for k, s := range a {
		if !slices.Equal(s, b[k]) {
			return false
		}
	}
	return true
}

// TestCheckpointKinds checks which checkpoints are full and which deltas:
// the first after Open is full, then deltas, until one fails or the head
// is truncated, after which the next is full and deletes the deltas
// before it; what they hold together comes back.
func TestCheckpointKinds(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New(nil)
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.WAL.FS = fsys
	opts.CheckpointOnClose = false
	opts.CheckpointMinBytes = 1 << 62
	h, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]sample{}
	// Deltas of 30 samples a series, against a head of a thousand.
	writeBatches(t, h, 50, 1000, 0, want)
	t0 := int64(1000_000)
	step := func(wantFull bool, fail bool) {
		t.Helper()
		writeBatches(t, h, 50, 30, t0, want)
		t0 += 30_000
		if fail {
			fsys.FailRenames(syscall.EIO)
			if err := h.Checkpoint(); err == nil {
				t.Fatal("a checkpoint whose rename failed succeeded")
			}
			fsys.Heal()
			return
		}
		if err := h.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		full, deltas, _, err := checkpointChain(vfs.OS{}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if gotFull := len(deltas) == 0; gotFull != wantFull {
			t.Fatalf("after the checkpoint at %d: %s and deltas %v, want full %v", t0, full, deltas, wantFull)
		}
	}
	step(true, false)  // the first after Open
	step(false, false) // deltas
	step(false, false)
	step(false, true) // fails
	step(true, false) // so full
	step(false, false)
	if st := h.Truncate(500_000); st.Chunks == 0 {
		t.Fatal("the truncation dropped no chunk")
	}
	step(true, false) // truncated: full
	if names := strings.Join(walEntries(t, dir), " "); strings.Count(names, checkpointPrefix) != 1 {
		t.Errorf("WAL directory holds %s, want the one checkpoint", names)
	}
	step(false, false)
	writeBatches(t, h, 50, 10, t0, want)
	// What the truncation left, whole chunks of it dropped.
	held := readAll(t, h, math.MinInt64, math.MaxInt64, all)
	for k, s := range want {
		if n := len(held[k]); n >= len(s) || !slices.Equal(held[k], s[len(s)-n:]) {
			t.Fatalf("series %s holds %d samples after the truncation, want the newest of %d", k, n, len(s))
		}
	}
	h = reopen(t, h, opts)
	assertEqual(t, readAll(t, h, math.MinInt64, math.MaxInt64, all), held)
}
