package block

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/tombstones"
	"github.com/strata-db/strata/internal/vfs"
)

// TestBlockDelete deletes from a block and checks what its queriers and
// a reopened block see, and that a damaged tombstones file is an error.
func TestBlockDelete(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{MinTime: 0, MaxTime: 999})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		xc := chunkenc.NewXORChunk()
		for ts := int64(0); ts < 1000; ts += 100 {
			xc.Append(ts, float64(ts))
		}
		if err := w.AddSeries(labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), []chunkenc.Meta{{Data: xc.Bytes(), MinT: 0, MaxT: 900, Enc: chunkenc.EncXOR}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(dir, meta.ULID.String())
	b, err := Open(LocalFiles(bdir))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := b.Querier(0, 999) // opened before the deletes
	eq := func(v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, "i", v) }
	if n, err := b.Delete(context.Background(), vfs.OS{}, bdir, -5000, 5000, eq("0")); err != nil || n != 1 {
		t.Fatalf("delete i=0: %d series, %v", n, err)
	}
	if n, err := b.Delete(context.Background(), vfs.OS{}, bdir, 250, 650, eq("1")); err != nil || n != 1 {
		t.Fatalf("delete i=1: %d series, %v", n, err)
	}
	if n, err := b.Delete(context.Background(), vfs.OS{}, bdir, 300, 400, eq("1")); err != nil || n != 0 {
		t.Fatalf("delete again what is deleted: %d series, %v; want 0", n, err)
	}
	read := func(b *Block, hints *promstorage.SelectHints) map[string][]int64 {
		q, _ := b.Querier(0, 999)
		defer q.Close()
		out := map[string][]int64{}
		ss := q.Select(context.Background(), true, hints, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		for ss.Next() {
			var ts []int64
			it := ss.At().Iterator(nil)
			for it.Next() != 0 {
				x, _ := it.At()
				ts = append(ts, x)
			}
			out[ss.At().Labels().Get("i")] = ts
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(b *Block) {
		t.Helper()
		if got := fmt.Sprint(read(b, nil)); got != "map[1:[0 100 200 700 800 900] 2:[0 100 200 300 400 500 600 700 800 900]]" {
			t.Errorf("samples %s", got)
		}
		if got := fmt.Sprint(read(b, &promstorage.SelectHints{Start: 300, End: 600, Func: "series"})); got != "map[2:[]]" {
			t.Errorf("series in [300, 600] %s, want i=2's", got)
		}
		q, _ := b.Querier(0, 999)
		defer q.Close()
		vals, _, err := q.LabelValues(context.Background(), "i", nil)
		if err != nil || fmt.Sprint(vals) != "[1 2]" {
			t.Errorf("values of i %v, %v; want [1 2]", vals, err)
		}
	}
	check(b)
	// A querier opened before reads the block as it was.
	if ss := before.Select(context.Background(), false, nil, eq("0")); !ss.Next() {
		t.Error("a querier opened before the delete lost i=0")
	}
	before.Close()
	b.Close()
	b, err = Open(LocalFiles(bdir))
	if err != nil {
		t.Fatal(err)
	}
	check(b)
	b.Close()

	if err := os.WriteFile(filepath.Join(bdir, tombstones.Filename), []byte("STMB\x01garbage"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(LocalFiles(bdir)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("block with a damaged tombstones file: %v, want ErrCorrupt", err)
	}
}
