package db

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/backfill"
)

// TestBackfillTakenIn moves backfilled blocks into a store's backfill
// directory, overlapping its blocks and its head, and checks that a
// compaction takes in those before the head and merges them with the
// blocks they overlap, that the one reaching into the head waits until
// the head has moved past it, and that every sample is there after a
// restart.
func TestBackfillTakenIn(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, nil)
	defer func() { db.Close() }()
	want := map[string][]string{}
	writeData(t, db, 0, 3*testRange, 3*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	before := len(db.Blocks())
	if before == 0 {
		t.Fatal("no blocks")
	}

	input := []struct {
		lset labels.Labels
		ts   []int64
		vs   []float64
	}{
		// Between the samples of a series in the blocks, and in the head.
		{labels.FromStrings("__name__", "m", "i", "0"), []int64{5, 1505, 2505}, []float64{0.5, 1.5, 2.5}},
		{labels.FromStrings("__name__", "old"), []int64{100, 200, 2995}, []float64{1, 2, 3}},
	}
	for _, in := range input {
		key := in.lset.String()
		for i, ts := range in.ts {
			want[key] = append(want[key], fmt.Sprintf("%d:%g", ts, in.vs[i]))
		}
		slices.SortFunc(want[key], func(a, b string) int {
			var ta, tb int64
			fmt.Sscanf(a, "%d:", &ta)
			fmt.Sscanf(b, "%d:", &tb)
			return int(ta - tb)
		})
	}
	src := func(add func(labels.Labels, []int64, []float64) error) error {
		for _, in := range input {
			if err := add(in.lset, in.ts, in.vs); err != nil {
				return err
			}
		}
		return nil
	}
	out := t.TempDir()
	opts := backfill.DefaultOptions()
	opts.BlockDuration = testRange
	metas, err := backfill.Write(context.Background(), src, out, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) != 3 {
		t.Fatalf("%d blocks backfilled, want 3", len(metas))
	}
	if err := os.Mkdir(filepath.Join(dir, BackfillDir), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, m := range metas {
		if err := os.Rename(filepath.Join(out, m.ULID.String()), filepath.Join(dir, BackfillDir, m.ULID.String())); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := readAll(t, db, math.MinInt64, math.MaxInt64)[`{__name__="old"}`]; ok {
		t.Fatal("backfilled series visible before a compaction took them in")
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, BackfillDir)); len(left) != 1 || left[0].Name() != metas[2].ULID.String() {
		t.Fatalf("backfill directory holds %v, want the block reaching into the head", left)
	}
	// A restart before the head moves on keeps the head's samples.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	if key := `{__name__="m", i="1"}`; !slices.Equal(readAll(t, db, math.MinInt64, math.MaxInt64)[key], want[key]) {
		t.Fatalf("%s lost samples at the restart", key)
	}
	writeData(t, db, 3*testRange, 5*testRange, 5*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, BackfillDir)); len(left) != 0 {
		t.Fatalf("backfill directory holds %v after the head moved past it", left)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	blocks := db.Blocks()
	for i := 1; i < len(blocks); i++ {
		if blocks[i].MinTime <= blocks[i-1].MaxTime {
			t.Errorf("blocks %v and %v still overlap after compaction", blocks[i-1], blocks[i])
		}
	}

	// A block the data directory has already is left in the backfill
	// directory, and holds up neither the compaction nor the store.
	dup := db.Blocks()[0].ULID.String()
	if err := os.CopyFS(filepath.Join(dir, BackfillDir, dup), os.DirFS(filepath.Join(dir, dup))); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatalf("compaction with a block already taken in the backfill directory: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, BackfillDir)); len(left) != 1 {
		t.Errorf("backfill directory holds %v, want the copy left", left)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}
