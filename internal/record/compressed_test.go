package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestCompressed checks that a record of series that repeat each other's
// labels is compressed and decompresses to the same bytes, that one that
// compression does not shrink is left as it is, and that damaged or
// nested Compressed records are reported as corrupt.
func TestCompressed(t *testing.T) {
	var series []RefSeries
	for i := range 100 {
		series = append(series, RefSeries{Ref: 1, Labels: labels.FromStrings("__name__", "node_cpu_seconds_total", "instance", fmt.Sprintf("host-%d:9100", i), "job", "node")})
	}
	rec := EncodeSeries(nil, series)
	var c Compressor
	z := c.Compress(rec)
	if Kind(z) != Compressed || len(z) >= len(rec)/2 {
		t.Fatalf("compressed to a %s record of %d bytes from %d", Kind(z), len(z), len(rec))
	}
	var d Decoder
	got, err := d.Decompress(z)
	if err != nil || !bytes.Equal(got, rec) {
		t.Fatalf("decompressed %d bytes, %v", len(got), err)
	}
	small := EncodeSeries(nil, series[:1])
	if got := c.Compress(small); !bytes.Equal(got, small) {
		t.Errorf("a record of one series: %s record of %d bytes, want it as it was (%d)", Kind(got), len(got), len(small))
	}

	nested := append([]byte{byte(Compressed)}, c.enc.EncodeAll(z, nil)...)
	truncated := z[:len(z)-3]
	for name, bad := range map[string][]byte{
		"truncated":   truncated,
		"not zstd":    {byte(Compressed), 1, 2, 3, 4},
		"nested":      nested,
		"other type":  rec,
		"type only":   {byte(Compressed)},
		"empty frame": append([]byte{byte(Compressed)}, c.enc.EncodeAll(nil, nil)...),
	} {
		if _, err := d.Decompress(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	var c Compressor
	f.Add(append([]byte(nil), c.Compress(EncodeSeries(nil, []RefSeries{
		{Ref: 1, Labels: labels.FromStrings("__name__", "up", "job", "node")},
		{Ref: 2, Labels: labels.FromStrings("__name__", "up", "job", "node")},
		{Ref: 3, Labels: labels.FromStrings("__name__", "up", "job", "node")},
	}))...))
	f.Add([]byte{byte(Compressed), 0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Decompress(rec)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if Kind(got) == Compressed {
			t.Fatal("a compressed record inside a compressed record was returned")
		}
	})
}
