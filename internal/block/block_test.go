package block

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
)

// TestWriteRead writes a block of float series and reads every sample
// back through a querier.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	// A small segment size, so that chunks spread over several files.
	w, err := NewWriter(dir, WriterOptions{MinTime: 0, MaxTime: 9999, SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	const nseries = 50
	for i := range nseries {
		var chunks []chunkenc.Meta
		for c := range 4 {
			xc := chunkenc.NewXORChunk()
			for j := range 25 {
				ts := int64(c*2500 + j*100)
				xc.Append(ts, float64(i*1000+int(ts)))
			}
			chunks = append(chunks, chunkenc.Meta{Data: xc.Bytes(), MinT: int64(c * 2500), MaxT: int64(c*2500 + 2400), Enc: chunkenc.EncXOR})
		}
		if err := w.AddSeries(labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%03d", i)), chunks, nil); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// Each series' four chunks are joined into one.
	if meta.Stats.Series != nseries || meta.Stats.Chunks != nseries || meta.Stats.Samples != 100*nseries {
		t.Errorf("stats %+v", meta.Stats)
	}
	bdir := filepath.Join(dir, meta.ULID.String())
	for name, fs := range map[string]Files{"mapped": LocalFiles(bdir), "pread": FSFiles{Dir: bdir}} {
		t.Run(name, func(t *testing.T) { readBack(t, fs, nseries) })
	}
}

func readBack(t *testing.T, fs Files, nseries int) {
	b, err := Open(fs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.chunks.segs) < 2 {
		t.Errorf("%d chunk segments, want several", len(b.chunks.segs))
	}
	q, err := b.Querier(0, 9999)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	var it promchunkenc.Iterator
	n := 0
	for ss.Next() {
		var i int
		fmt.Sscanf(ss.At().Labels().Get("i"), "%d", &i)
		it = ss.At().Iterator(it)
		for it.Next() == promchunkenc.ValFloat {
			ts, v := it.At()
			if v != float64(i*1000+int(ts)) {
				t.Fatalf("series %d at %d: %v", i, ts, v)
			}
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 100*nseries {
		t.Errorf("read %d samples, want %d", n, 100*nseries)
	}
}

// TestWriterDensifies writes a series of decimal values and one that XOR
// encodes best, and checks that the first's chunk is stored in the
// decimal encoding and the second's stays XOR, and that both read back
// bit for bit.
func TestWriterDensifies(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{MinTime: 0, MaxTime: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	value := map[string]func(int) float64{
		"decimal": func(j int) float64 { return float64(j*j) / 100 },
		// Alternating thirds: consecutive values' bits differ in two bits
		// (XOR's few) but by 2^52 as integers.
		"thirds": func(j int) float64 { return []float64{1.0 / 3, 2.0 / 3}[j%2] },
	}
	for _, name := range []string{"decimal", "thirds"} {
		xc := chunkenc.NewXORChunk()
		for j := range 120 {
			xc.Append(int64(j*15000), value[name](j))
		}
		c := chunkenc.Meta{Data: xc.Bytes(), MinT: 0, MaxT: 119 * 15000, Enc: chunkenc.EncXOR}
		if err := w.AddSeries(labels.FromStrings("__name__", name), []chunkenc.Meta{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// The chunk file holds the decimal series' chunk, then the other's.
	seg, err := os.ReadFile(filepath.Join(dir, meta.ULID.String(), "chunks", segmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	var encs []chunkenc.Encoding
	for rest := seg[len(chunksHeader()):]; len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		encs = append(encs, chunkenc.Encoding(rest[k]))
		rest = rest[k+1+int(n)+4:]
	}
	if want := []chunkenc.Encoding{chunkenc.EncDecimal, chunkenc.EncXOR}; !slices.Equal(encs, want) {
		t.Errorf("chunk encodings %v, want %v", encs, want)
	}
	b, err := Open(LocalFiles(filepath.Join(dir, meta.ULID.String())))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q, err := b.Querier(0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it promchunkenc.Iterator
	for ss.Next() {
		name := ss.At().Labels().Get("__name__")
		it = ss.At().Iterator(it)
		j := 0
		for ; it.Next() == promchunkenc.ValFloat; j++ {
			ts, v := it.At()
			if ts != int64(j*15000) || math.Float64bits(v) != math.Float64bits(value[name](j)) {
				t.Fatalf("%s sample %d: (%d, %v)", name, j, ts, v)
			}
		}
		if it.Err() != nil || j != 120 {
			t.Fatalf("%s: %d samples, %v", name, j, it.Err())
		}
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
}

// TestSelectLabelsOnly checks that a select for /api/v1/series finds the
// series with samples in the range without reading their chunks.
func TestSelectLabelsOnly(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{MinTime: 0, MaxTime: 999})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range [][2]int64{{0, 100}, {500, 900}} {
		xc := chunkenc.NewXORChunk()
		xc.Append(r[0], 1)
		xc.Append(r[1], 2)
		if err := w.AddSeries(labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), []chunkenc.Meta{{Data: xc.Bytes(), MinT: r[0], MaxT: r[1], Enc: chunkenc.EncXOR}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(LocalFiles(filepath.Join(dir, meta.ULID.String())))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q, _ := b.Querier(0, 999)
	defer q.Close()
	ss := q.Select(context.Background(), true, &promstorage.SelectHints{Start: 200, End: 999, Func: "series"}, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	var got []string
	for ss.Next() {
		got = append(got, ss.At().Labels().Get("i"))
		if ss.At().Iterator(nil).Next() != promchunkenc.ValNone {
			t.Error("a labels-only series has samples")
		}
	}
	if fmt.Sprint(got) != "[1]" {
		t.Errorf("series with samples in [200, 999]: %v, want [1]", got)
	}
}

// memSource is a Source over bytes, without Bytes, so readers take the
// ReadAt path, as for a block in object storage.
type memSource struct{ b []byte }

func (m memSource) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m memSource) Size() int64  { return int64(len(m.b)) }
func (m memSource) Close() error { return nil }

// FuzzChunkReader checks that no segment file content and no reference
// make the chunk reader panic, through both read paths.
func FuzzChunkReader(f *testing.F) {
	xc := chunkenc.NewXORChunk()
	xc.Append(1, 1)
	good := appendChunkRecord(chunksHeader(), chunkenc.EncXOR, xc.Bytes())
	f.Add(good, uint64(chunkRef(1, chunksHeaderSize)))
	f.Add(good[:len(good)-1], uint64(chunkRef(1, chunksHeaderSize)))
	f.Add([]byte("STCK"), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, ref uint64) {
		for _, src := range []Source{memSource{data}, &mappedFile{b: data}} {
			r := &chunkReader{segs: []Source{src}}
			if _, b, err := r.chunk(index.ChunkRef(ref)); err == nil && len(b) > len(data) {
				t.Fatalf("chunk %x: %d bytes from %d", ref, len(b), len(data))
			}
		}
	})
}

// TestWriterJoinsChunks checks that runs of a series' float chunks,
// XOR or decimal, are joined into decimal chunks of up to
// BlockChunkSamples samples where that is smaller, that a histogram
// chunk ends a run, and that every sample reads back bit for bit.
func TestWriterJoinsChunks(t *testing.T) {
	const step = 15000
	hundredths := func(j int) float64 { return float64(100000+j*37+j%7) / 100 }
	thirds := func(j int) float64 { return []float64{1.0 / 3, 2.0 / 3}[j%2] }
	var dense chunkenc.Densifier
	// chunk encodes n samples from sample number j0 on.
	chunk := func(j0, n int, val func(int) float64, enc chunkenc.Encoding) chunkenc.Meta {
		c := chunkenc.Meta{MinT: int64(j0 * step), MaxT: int64((j0 + n - 1) * step), Enc: chunkenc.EncXOR}
		switch enc {
		case chunkenc.EncHistogram:
			hc := chunkenc.NewHistogramChunk()
			for j := j0; j < j0+n; j++ {
				hc.Append(int64(j*step), &histogram.Histogram{Count: uint64(j), ZeroCount: uint64(j), Sum: float64(j)})
			}
			c.Data, c.Enc = hc.Bytes(), enc
			return c
		}
		xc := chunkenc.NewXORChunk()
		for j := j0; j < j0+n; j++ {
			xc.Append(int64(j*step), val(j))
		}
		c.Data = xc.Bytes()
		if enc == chunkenc.EncDecimal {
			d, ok := dense.Densify(c.Data)
			if !ok {
				t.Fatal("not densified")
			}
			c.Data, c.Enc = slices.Clone(d), enc
		}
		return c
	}
	type want struct {
		enc        chunkenc.Encoding
		mint, maxt int64
	}
	span := func(enc chunkenc.Encoding, j0, n int) want {
		return want{enc, int64(j0 * step), int64((j0 + n - 1) * step)}
	}
	x, d, h := chunkenc.EncXOR, chunkenc.EncDecimal, chunkenc.EncHistogram
	cases := []struct {
		name   string
		val    func(int) float64
		chunks []chunkenc.Meta
		want   []want
	}{{
		name: "a six of 120",
		val:  hundredths,
		chunks: []chunkenc.Meta{chunk(0, 120, hundredths, x), chunk(120, 120, hundredths, x), chunk(240, 120, hundredths, x),
			chunk(360, 120, hundredths, x), chunk(480, 120, hundredths, x), chunk(600, 120, hundredths, x)},
		want: []want{span(d, 0, 480), span(d, 480, 240)},
	}, {
		name:   "b histogram between",
		val:    hundredths,
		chunks: []chunkenc.Meta{chunk(0, 120, hundredths, x), chunk(120, 10, nil, h), chunk(130, 120, hundredths, x), chunk(250, 120, hundredths, x)},
		want:   []want{span(d, 0, 120), span(h, 120, 10), span(d, 130, 240)},
	}, {
		name:   "c thirds stay XOR",
		val:    thirds,
		chunks: []chunkenc.Meta{chunk(0, 120, thirds, x), chunk(120, 120, thirds, x)},
		want:   []want{span(x, 0, 120), span(x, 120, 120)},
	}, {
		name:   "d decimal chunks of a block",
		val:    hundredths,
		chunks: []chunkenc.Meta{chunk(0, 100, hundredths, d), chunk(100, 100, hundredths, d), chunk(200, 100, hundredths, x)},
		want:   []want{span(d, 0, 300)},
	}}
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{MinTime: 0, MaxTime: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if err := w.AddSeries(labels.FromStrings("__name__", c.name), c.chunks, nil); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(LocalFiles(filepath.Join(dir, meta.ULID.String())))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cur, err := newSeriesCursor(b)
	if err != nil {
		t.Fatal(err)
	}
	var it chunkenc.SeriesIterator
	for _, c := range cases {
		if !cur.ok || cur.lset.Get("__name__") != c.name {
			t.Fatalf("series %v, want %s", cur.lset, c.name)
		}
		got, err := cur.appendChunks(nil)
		if err != nil {
			t.Fatal(err)
		}
		var spans []want
		for _, g := range got {
			spans = append(spans, want{g.Enc, g.MinT, g.MaxT})
		}
		if !slices.Equal(spans, c.want) {
			t.Errorf("%s: chunks %v, want %v", c.name, spans, c.want)
		}
		it.Reset(got, nil, 0, 1<<40)
		j := 0
		for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
			if it.AtT() != int64(j*step) {
				t.Fatalf("%s: sample %d at %d", c.name, j, it.AtT())
			}
			if vt == promchunkenc.ValFloat {
				if _, v := it.At(); math.Float64bits(v) != math.Float64bits(c.val(j)) {
					t.Fatalf("%s: sample %d is %v, want %v", c.name, j, v, c.val(j))
				}
			}
			j++
		}
		if it.Err() != nil || int64(j*step) != c.chunks[len(c.chunks)-1].MaxT+step {
			t.Fatalf("%s: %d samples, %v", c.name, j, it.Err())
		}
		if err := cur.next(); err != nil {
			t.Fatal(err)
		}
	}
	if meta.Stats.Samples != 720+370+240+300 {
		t.Errorf("stats count %d samples", meta.Stats.Samples)
	}
}
