package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// bytesSrc is a Source in memory; with mapped set it also has Bytes, as a
// mapped file does, so both read paths are tested.
type bytesSrc struct {
	b      []byte
	mapped bool
}

func (s bytesSrc) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(s.b)) {
		return 0, errors.New("out of range")
	}
	n := copy(p, s.b[off:])
	if n < len(p) {
		return n, errors.New("short read")
	}
	return n, nil
}
func (s bytesSrc) Size() int64 { return int64(len(s.b)) }

type mappedSrc struct{ bytesSrc }

func (s mappedSrc) Bytes() []byte { return s.b }

func sources(b []byte) map[string]Source {
	return map[string]Source{"readat": bytesSrc{b: b}, "mapped": mappedSrc{bytesSrc{b: b}}}
}

// chunksOf returns made-up chunk metas for series i.
func chunksOf(i int) []ChunkMeta {
	var out []ChunkMeta
	t := int64(i*37) - 1000
	for c := range i % 4 {
		out = append(out, ChunkMeta{Ref: ChunkRef(uint64(1+c)<<32 | uint64(8+i*100+c)), MinT: t, MaxT: t + int64(c*1000)})
		t += int64(c*1000) + 1 + int64(i%7)
	}
	return out
}

// startsOf returns made-up start time changes for series i: none for
// most, one, or several with a change to unknown (0) and a start after
// its time.
func startsOf(i int) []chunkenc.StartTime {
	t := int64(i*37) - 1000
	switch i % 5 {
	case 1:
		return []chunkenc.StartTime{{T: t, ST: t - 15000}}
	case 3:
		return []chunkenc.StartTime{{T: t - 5, ST: -7}, {T: t + 1, ST: 0}, {T: t + 300_000, ST: t + 300_001}, {T: math.MaxInt64, ST: math.MinInt64}}
	}
	return nil
}

// writeIndex writes series with chunksOf and, if starts is set, startsOf.
func writeIndex(t testing.TB, series []labels.Labels, starts bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i, lset := range series {
		var st []chunkenc.StartTime
		if starts {
			st = startsOf(i)
		}
		if err := w.AddSeries(lset, chunksOf(i), st); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRoundTrip writes an index of thousands of series and reads back
// every series, label name, label value and postings list, through both
// read paths.
func TestRoundTrip(t *testing.T) {
	series := testSeries(3000)
	for _, withStarts := range []bool{false, true} {
		for name, src := range sources(writeIndex(t, series, withStarts)) {
			t.Run(fmt.Sprintf("%s/starts=%v", name, withStarts), func(t *testing.T) {
				testRoundTrip(t, src, series, withStarts)
			})
		}
	}
}

func testRoundTrip(t *testing.T, src Source, series []labels.Labels, withStarts bool) {
	r, err := NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumSeries() != uint64(len(series)) {
		t.Fatalf("%d series, want %d", r.NumSeries(), len(series))
	}
	var (
		sb     labels.ScratchBuilder
		lset   labels.Labels
		chunks []ChunkMeta
		starts []chunkenc.StartTime
	)
	for i, want := range series {
		if err := r.Series(storage.SeriesRef(i), &sb, &lset, &chunks, &starts); err != nil {
			t.Fatal(err)
		}
		if !labels.Equal(lset, want) || !slices.Equal(chunks, chunksOf(i)) {
			t.Fatalf("series %d: %s %v, want %s %v", i, lset, chunks, want, chunksOf(i))
		}
		wantStarts := startsOf(i)
		if !withStarts {
			wantStarts = nil
		}
		if !slices.Equal(starts, wantStarts) {
			t.Fatalf("series %d: start times %v, want %v", i, starts, wantStarts)
		}
		// Without a place for them, the start times are skipped.
		if err := r.Series(storage.SeriesRef(i), &sb, &lset, &chunks, nil); err != nil || !slices.Equal(chunks, chunksOf(i)) {
			t.Fatalf("series %d without start times: %v %v", i, chunks, err)
		}
	}
	mem := NewMemPostings()
	for i, lset := range series {
		mem.Add(storage.SeriesRef(i), lset.Range)
	}
	names, _ := r.LabelNames()
	if !slices.Equal(names, mem.LabelNames()) {
		t.Errorf("label names %v, want %v", names, mem.LabelNames())
	}
	// What a caller does with the names is its own business.
	scratch, _ := r.LabelNames()
	slices.Reverse(scratch)
	if again, _ := r.LabelNames(); !slices.Equal(again, mem.LabelNames()) {
		t.Errorf("label names %v after a caller changed its copy, want %v", again, mem.LabelNames())
	}
	for _, n := range names {
		got, _ := r.LabelValues(n)
		want, _ := mem.LabelValues(n)
		if !slices.Equal(got, want) {
			t.Errorf("values of %s: %v, want %v", n, got, want)
		}
	}
	checkMatchers(t, r, series)
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(&bytes.Buffer{})
	if err := w.AddSeries(labels.FromStrings("a", "2"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.AddSeries(labels.FromStrings("a", "1"), nil, nil); err == nil {
		t.Error("series out of order accepted")
	}
	if err := w.AddSeries(labels.FromStrings("a", "3"), []ChunkMeta{{Ref: 1, MinT: 0, MaxT: 10}, {Ref: 2, MinT: 10, MaxT: 20}}, nil); err == nil {
		t.Error("overlapping chunks accepted")
	}
	if err := w.AddSeries(labels.FromStrings("a", "4"), nil, []chunkenc.StartTime{{T: 5, ST: 1}, {T: 5, ST: 2}}); err == nil {
		t.Error("start time changes out of order accepted")
	}
}

// TestGolden checks the bytes of a small index against testdata, so that
// a format change is a visible decision: go test -run TestGolden -update.
// Without start times it is the version 1 that strata read before them.
func TestGolden(t *testing.T) {
	for file, starts := range map[string]bool{"small.golden": false, "small-starts.golden": true} {
		t.Run(file, func(t *testing.T) { testGolden(t, file, starts) })
	}
}

func testGolden(t *testing.T, file string, starts bool) {
	series := []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "api"),
		labels.FromStrings("__name__", "up", "job", "db"),
		labels.FromStrings("__name__", "up", "job", "db", "zone", "eu"),
		labels.FromStrings("__name__", "up", "job", "web"),
	}
	if !starts {
		series = series[:3]
	}
	got := hex.Dump(writeIndex(t, series, starts))
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.MkdirAll("testdata", 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("index bytes differ from %s (rerun with -update if the format changed on purpose):\n%s", path, got)
	}
}

// TestCorruption flips bytes of an index: opening it or reading any part
// fails with ErrCorrupt, never with a panic or a wrong answer.
func TestCorruption(t *testing.T) {
	series := testSeries(50)
	good := writeIndex(t, series, true)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		b := slices.Clone(good)
		i := rng.IntN(len(b))
		b[i] ^= byte(1 + rng.IntN(255))
		r, err := NewReader(bytesSrc{b: b})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at %d: open: %v, want ErrCorrupt", i, err)
			}
			continue
		}
		// The flip is in a part read later: reading everything must
		// either fail with ErrCorrupt or give the right answer.
		var (
			sb     labels.ScratchBuilder
			lset   labels.Labels
			chunks []ChunkMeta
			starts []chunkenc.StartTime
		)
		for ref := range series {
			err := r.Series(storage.SeriesRef(ref), &sb, &lset, &chunks, &starts)
			if err == nil && (!labels.Equal(lset, series[ref]) || !slices.Equal(chunks, chunksOf(ref)) || !slices.Equal(starts, startsOf(ref))) {
				t.Fatalf("flip at %d: series %d read wrong without an error", i, ref)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at %d: %v", i, err)
			}
		}
		for _, ms := range testMatchers {
			p, err := PostingsForMatchers(context.Background(), r, ms...)
			if err == nil {
				var got []storage.SeriesRef
				if got, err = Expand(p); err == nil && !slices.Equal(got, bruteForce(series, ms)) {
					t.Fatalf("flip at %d: %v answered %v without an error", i, ms, got)
				}
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at %d: %v", i, err)
			}
		}
	}
}

// FuzzReader opens arbitrary bytes as an index and reads all of it: no
// input may panic.
func FuzzReader(f *testing.F) {
	f.Add(writeIndex(f, testSeries(5), false))
	f.Add(writeIndex(f, testSeries(5), true))
	f.Add(writeIndex(f, nil, false))
	f.Add([]byte("STIX"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, src := range sources(b) {
			r, err := NewReader(src)
			if err != nil {
				continue
			}
			var (
				sb     labels.ScratchBuilder
				lset   labels.Labels
				chunks []ChunkMeta
				starts []chunkenc.StartTime
			)
			for ref := range min(r.NumSeries(), 1000) {
				_ = r.Series(storage.SeriesRef(ref), &sb, &lset, &chunks, &starts)
			}
			names, _ := r.LabelNames()
			for _, n := range names {
				vals, _ := r.LabelValues(n)
				if p, err := r.Postings(n, vals...); err == nil {
					Expand(p)
				}
			}
		}
	})
}

func TestCorruptionErrorSays(t *testing.T) {
	err := error(&CorruptionError{Section: "postings", Offset: 42, Reason: "checksum mismatch"})
	if s := err.Error(); !strings.Contains(s, "postings") || !strings.Contains(s, "42") {
		t.Errorf("error %q does not say where", s)
	}
}

// TestUvarintLen checks the length the Writer sizes its postings with
// against encoding/binary's, at every boundary of a varint's length.
func TestUvarintLen(t *testing.T) {
	for shift := range 64 {
		for _, x := range []uint64{1<<shift - 1, 1 << shift, 1<<shift + 1} {
			if got, want := uvarintLen(x), len(binary.AppendUvarint(nil, x)); got != want {
				t.Errorf("uvarintLen(%d) = %d, want %d", x, got, want)
			}
		}
	}
	if got := uvarintLen(math.MaxUint64); got != binary.MaxVarintLen64 {
		t.Errorf("uvarintLen(MaxUint64) = %d, want %d", got, binary.MaxVarintLen64)
	}
}
