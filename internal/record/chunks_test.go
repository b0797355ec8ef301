package record

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/strata-db/strata/internal/chunkenc"
)

func chunkSeriesFixture() []RefChunkSeries {
	return []RefChunkSeries{
		{Ref: 1, Labels: labels.FromStrings("__name__", "up", "job", "node"), LastV: 1, Chunks: []chunkenc.Meta{
			{Enc: chunkenc.EncXOR, MinT: -5000, MaxT: 10, Data: []byte{0, 2, 0xde, 0xad}},
			{Enc: chunkenc.EncXOR, MinT: 11, MaxT: 11, Data: []byte{0, 1, 0xbe}},
		}},
		{Ref: 7, Labels: labels.FromStrings("__name__", "no_samples")},
		{Ref: math.MaxUint64, Labels: labels.FromStrings("名前", "値"), LastV: math.Float64frombits(0x7ff0000000000002), Chunks: []chunkenc.Meta{
			{Enc: chunkenc.EncXOR, MinT: math.MinInt64 + 1, MaxT: math.MaxInt64, Data: []byte{}},
		}},
	}
}

func equalChunkSeries(a, b []RefChunkSeries) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Ref != y.Ref || !labels.Equal(x.Labels, y.Labels) || math.Float64bits(x.LastV) != math.Float64bits(y.LastV) || len(x.Chunks) != len(y.Chunks) {
			return false
		}
		for j := range x.Chunks {
			cx, cy := x.Chunks[j], y.Chunks[j]
			if cx.Enc != cy.Enc || cx.MinT != cy.MinT || cx.MaxT != cy.MaxT || !bytes.Equal(cx.Data, cy.Data) {
				return false
			}
		}
	}
	return true
}

func TestChunkSeriesRoundTrip(t *testing.T) {
	want := chunkSeriesFixture()
	rec := encodeChunkSeries(want)
	var d Decoder
	got, err := d.ChunkSeries(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equalChunkSeries(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Nothing may alias the record: scribble over it and compare again.
	for i := range rec {
		rec[i] = 0xff
	}
	if !equalChunkSeries(got, want) {
		t.Fatal("decoded series changed when the record buffer was reused")
	}
	// Appending to one chunk's bytes must not run into the next one's.
	got[0].Chunks[0].Data = append(got[0].Chunks[0].Data, 1, 2, 3)
	if !bytes.Equal(got[0].Chunks[1].Data, want[0].Chunks[1].Data) {
		t.Fatal("chunk data slices share capacity")
	}
}

func TestChunkSeriesAliasChunks(t *testing.T) {
	want := chunkSeriesFixture()
	rec := encodeChunkSeries(want)
	d := Decoder{AliasChunks: true}
	got, err := d.ChunkSeries(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equalChunkSeries(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	c := got[0].Chunks[0].Data
	if cap(c) != len(c) {
		t.Fatalf("chunk bytes have capacity %d beyond their length %d", cap(c), len(c))
	}
	// Chunk bytes are slices of the record: scribbling over the record
	// shows through. Labels are still copies.
	for i := range rec {
		rec[i] = 0xff
	}
	if !bytes.Equal(c, bytes.Repeat([]byte{0xff}, len(c))) {
		t.Fatal("chunk bytes do not alias the record")
	}
	if !labels.Equal(got[0].Labels, want[0].Labels) {
		t.Fatal("labels alias the record")
	}
}

func TestChunkSeriesRejects(t *testing.T) {
	good := encodeChunkSeries(chunkSeriesFixture())
	cases := map[string][]byte{
		"wrong type":     append([]byte{byte(Series)}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(append([]byte{}, good...), 0),
		"huge count":     {byte(ChunkSeries), 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			var d Decoder
			dst := []RefChunkSeries{{Ref: 99}}
			got, err := d.ChunkSeries(rec, dst)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got error %v, want ErrCorrupt", err)
			}
			if !reflect.DeepEqual(got, dst) {
				t.Fatalf("dst changed on error: %+v", got)
			}
		})
	}
}

// FuzzDecodeChunkSeries: decoding arbitrary bytes never panics, and what
// decodes re-encodes to a record that decodes the same.
//
//	go test ./internal/record -run NONE -fuzz FuzzDecodeChunkSeries -fuzztime 60s
func FuzzDecodeChunkSeries(f *testing.F) {
	f.Add(encodeChunkSeries(nil))
	f.Add(encodeChunkSeries(chunkSeriesFixture()))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.ChunkSeries(rec, nil)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v but %d series returned", err, len(got))
			}
			return
		}
		again, err := d.ChunkSeries(encodeChunkSeries(got), nil)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !equalChunkSeries(again, got) {
			t.Fatalf("round trip changed the series")
		}
	})
}

func TestMetadataRoundTrip(t *testing.T) {
	want := []RefMetadata{
		{MetricName: "http_requests_total", Type: "counter", Help: "Requests served.", Unit: ""},
		{MetricName: "temp", Type: "gauge", Help: "", Unit: "celsius"},
		{MetricName: "x"},
	}
	rec := EncodeMetadata(nil, want)
	var d Decoder
	got, err := d.Metadata(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range [][]byte{rec[:len(rec)-1], append(append([]byte{}, rec...), 0), {byte(Metadata), 0xff, 0x01}} {
		if _, err := d.Metadata(bad, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%x: got %v, want ErrCorrupt", bad, err)
		}
	}
}

// FuzzDecodeMetadata: decoding arbitrary bytes never panics, and what
// decodes re-encodes to the same entries.
func FuzzDecodeMetadata(f *testing.F) {
	f.Add(EncodeMetadata(nil, []RefMetadata{{MetricName: "m", Type: "counter", Help: "h", Unit: "u"}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Metadata(rec, nil)
		if err != nil {
			return
		}
		again, err := d.Metadata(EncodeMetadata(nil, got), nil)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip: %v, %+v vs %+v", err, again, got)
		}
	})
}

func TestExemplarsRoundTrip(t *testing.T) {
	want := []RefExemplar{
		{Ref: 3, T: 1000, V: 0.25, HasTs: true, Labels: labels.FromStrings("trace_id", "abc123")},
		{Ref: 1, T: -5, V: math.Float64frombits(0x7ff0000000000002), Labels: labels.EmptyLabels()},
	}
	rec := EncodeExemplars(nil, want)
	var d Decoder
	got, err := d.Exemplars(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d exemplars", len(got))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Ref != w.Ref || g.T != w.T || math.Float64bits(g.V) != math.Float64bits(w.V) || g.HasTs != w.HasTs || !labels.Equal(g.Labels, w.Labels) {
			t.Fatalf("exemplar %d: got %+v, want %+v", i, g, w)
		}
	}
	bad := append([]byte{}, rec...)
	bad[5] = 7 // flags byte of the first exemplar: type, count, ref, two bytes of timestamp
	for _, b := range [][]byte{rec[:len(rec)-1], append(append([]byte{}, rec...), 0), bad} {
		if _, err := d.Exemplars(b, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%x: got %v, want ErrCorrupt", b, err)
		}
	}
}

// FuzzDecodeExemplars: decoding arbitrary bytes never panics, and what
// decodes re-encodes to a record that decodes the same.
func FuzzDecodeExemplars(f *testing.F) {
	f.Add(EncodeExemplars(nil, []RefExemplar{{Ref: 1, T: 2, V: 3, HasTs: true, Labels: labels.FromStrings("a", "b")}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Exemplars(rec, nil)
		if err != nil {
			return
		}
		again, err := d.Exemplars(EncodeExemplars(nil, got), nil)
		if err != nil || len(again) != len(got) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range got {
			if again[i].Ref != got[i].Ref || again[i].T != got[i].T || !labels.Equal(again[i].Labels, got[i].Labels) {
				t.Fatalf("exemplar %d changed", i)
			}
		}
	})
}

// encodeChunkSeries returns the record of series.
func encodeChunkSeries(series []RefChunkSeries) []byte {
	var e ChunkSeriesEncoder
	for i := range series {
		e.Add(&series[i])
	}
	return e.Record(nil)
}
