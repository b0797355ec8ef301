package db

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestSnapshot writes snapshots of a store with blocks, tombstones and a
// head, with the head and without, and opens a store on each: it answers
// as the source did, and the blocks' files are the source's, linked.
func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, nil)
	defer func() { db.Close() }()
	want := map[string][]string{}
	writeData(t, db, 0, 5*testRange, 5*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(context.Background(), 1000, 4500, labels.MustNewMatcher(labels.MatchEqual, "i", "3")); err != nil {
		t.Fatal(err)
	}
	deleteFrom(want, `{__name__="m", i="3"}`, 1000, 4500)
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	headMint := db.Head().MinTime()

	name, err := db.Snapshot(false)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, SnapshotsDir, name)
	b := db.Blocks()[0].ULID.String()
	src, err1 := os.Stat(filepath.Join(dir, b, "index"))
	dst, err2 := os.Stat(filepath.Join(snap, b, "index"))
	if err1 != nil || err2 != nil || src.Sys().(*syscall.Stat_t).Ino != dst.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("the snapshot's index of block %s is not a link of the source's: %v %v", b, err1, err2)
	}
	copyOf := openTestDB(t, snap, nil)
	assertSame(t, readAll(t, copyOf, math.MinInt64, math.MaxInt64), want)
	copyOf.Close()

	name, err = db.Snapshot(true)
	if err != nil {
		t.Fatal(err)
	}
	copyOf = openTestDB(t, filepath.Join(dir, SnapshotsDir, name), nil)
	defer copyOf.Close()
	blocksOnly := map[string][]string{}
	for k := range want {
		deleteFrom(want, k, headMint, math.MaxInt64)
		if len(want[k]) > 0 {
			blocksOnly[k] = want[k]
		}
	}
	assertSame(t, readAll(t, copyOf, math.MinInt64, math.MaxInt64), blocksOnly)
	// The source opens with its snapshots beside its blocks.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
}
