package db

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// lateWindow takes any late sample: Prometheus' 100y.
func lateWindow(o *Options) { o.Head.OutOfOrderWindow = (100 * 365 * 24 * time.Hour).Milliseconds() }

// writeLate appends late samples of every kind to ranges writeData wrote,
// [0, 3000), between its samples (at ...5 ms), to existing series and a
// new one, and adds them to want in their place.
func writeLate(t *testing.T, db *DB, want map[string][]string) {
	t.Helper()
	app := db.Appender(context.Background())
	add := func(lset labels.Labels, s storage.Sample, text string) {
		t.Helper()
		if _, err := app.Append(0, lset, s); err != nil {
			t.Fatalf("late sample %s at %d: %v", lset, s.T, err)
		}
		k := lset.String()
		i, _ := slices.BinarySearchFunc(want[k], s.T, func(e string, ts int64) int { return int(sampleTime(e) - ts) })
		want[k] = slices.Insert(want[k], i, text)
	}
	for _, ts := range []int64{5, 995, 1505, 2995} {
		lset := labels.FromStrings("__name__", "m", "i", "3")
		add(lset, storage.Sample{T: ts, V: -1}, fmt.Sprintf("%d:%g", ts, -1.0))
		h := testHistogram(ts)
		add(labels.FromStrings("__name__", "h"), storage.Sample{T: ts, H: h}, fmt.Sprintf("%d:h%s", ts, h.Copy().Compact(0)))
		fh := testHistogram(ts + 5).ToFloat(nil)
		add(labels.FromStrings("__name__", "fh"), storage.Sample{T: ts, FH: fh}, fmt.Sprintf("%d:fh%s", ts, fh.Copy().Compact(0)))
		add(labels.FromStrings("__name__", "late_only"), storage.Sample{T: ts, V: float64(ts)}, fmt.Sprintf("%d:%g", ts, float64(ts)))
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sampleTime is the timestamp of a sample as readAll renders it.
func sampleTime(e string) int64 {
	ts, _ := strconv.ParseInt(e[:strings.IndexByte(e, ':')], 10, 64)
	return ts
}

// assertDisjoint fails if any two blocks overlap in time.
func assertDisjoint(t *testing.T, db *DB) {
	t.Helper()
	blocks := db.Blocks()
	for i := 1; i < len(blocks); i++ {
		if blocks[i].MinTime <= blocks[i-1].MaxTime {
			t.Errorf("blocks [%d, %d] and [%d, %d] overlap", blocks[i-1].MinTime, blocks[i-1].MaxTime, blocks[i].MinTime, blocks[i].MaxTime)
		}
	}
}

// TestLateSamplesReachBlocks writes late samples into ranges already in
// blocks: they read back at once, go to blocks of their own when the
// next range is written, which are merged with the blocks they overlap,
// and are all there, once each, across a restart.
func TestLateSamplesReachBlocks(t *testing.T) {
	dir := t.TempDir()
	// A clock that stands still: with a block range of a second, a
	// slow run would otherwise find the late samples due by the time.
	stopped := time.Now()
	db := openTestDB(t, dir, func(o *Options) {
		lateWindow(o)
		o.Now = func() time.Time { return stopped }
	})
	want := map[string][]string{}
	writeData(t, db, 0, 4*testRange, 4*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(db.Blocks()); n != 3 {
		t.Fatalf("%d blocks, want 3", n)
	}

	// Without a window the same samples are refused.
	plain := openTestDB(t, t.TempDir(), nil)
	writeData(t, plain, 0, 4*testRange, 4*testRange, map[string][]string{})
	if err := plain.Compact(); err != nil {
		t.Fatal(err)
	}
	app := plain.Appender(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "m", "i", "3"), storage.Sample{T: 5, V: -1}); err == nil {
		t.Error("late sample in a block's range taken without a window")
	}
	app.Rollback()
	plain.Close()

	writeLate(t, db, want)
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	if got := db.Head().MinTime(); got != 5 {
		t.Errorf("head min time %d, want 5", got)
	}
	// Late samples wait for the next range to be written.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := db.Head().MinTime(); got != 5 {
		t.Errorf("head min time %d after a compaction with no range to write, want 5", got)
	}
	writeData(t, db, 4*testRange, 5*testRange, 5*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	assertDisjoint(t, db)
	if n := len(db.Blocks()); n != 4 {
		t.Errorf("%d blocks after merging the late ones, want 4", n)
	}
	if got := db.Head().MinTime(); got < 4*testRange {
		t.Errorf("head min time %d after compaction, want >= %d", got, 4*testRange)
	}
	// A query of one block's range reads it alone and gets each sample
	// once.
	for _, b := range db.Blocks() {
		got := readAll(t, db, b.MinTime, b.MaxTime)
		for k, samples := range got {
			prev := int64(math.MinInt64)
			for _, e := range samples {
				ts := sampleTime(e)
				if ts <= prev {
					t.Errorf("%s in [%d, %d]: %d after %d", k, b.MinTime, b.MaxTime, ts, prev)
				}
				prev = ts
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, lateWindow)
	defer db.Close()
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}

// TestCrashDuringLateCompaction is TestCrashDuringCompaction for the
// compaction that writes late samples to a block of their own and merges
// it with the blocks it overlaps.
func TestCrashDuringLateCompaction(t *testing.T) {
	crashAtEachStep(t, lateWindow, func(db *DB, want map[string][]string) {
		writeData(t, db, 0, 4*testRange, 4*testRange, want)
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		writeLate(t, db, want)
		writeData(t, db, 4*testRange, 5*testRange, 5*testRange, want)
	})
}
