package db

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/tombstones"
)

// deleteFrom drops from want, as readAll renders it, the samples of
// series key in [mint, maxt], and the series if none is left.
func deleteFrom(want map[string][]string, key string, mint, maxt int64) {
	kept := slices.DeleteFunc(want[key], func(s string) bool {
		var ts int64
		fmt.Sscanf(s, "%d:", &ts)
		return ts >= mint && ts <= maxt
	})
	if len(kept) == 0 {
		delete(want, key)
		return
	}
	want[key] = kept
}

// seriesNames returns the series of the store in [mint, maxt] as
// /api/v1/series finds them, and the values of label i.
func seriesNames(t *testing.T, db *DB, mint, maxt int64) ([]string, []string) {
	t.Helper()
	q, err := db.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, &promstorage.SelectHints{Start: mint, End: maxt, Func: "series"}, matchAll)
	var names []string
	for ss.Next() {
		names = append(names, ss.At().Labels().String())
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	vals, _, err := q.LabelValues(context.Background(), "i", nil)
	if err != nil {
		t.Fatal(err)
	}
	return names, vals
}

// TestDelete deletes a series over all time and parts of others, over
// blocks and the head, while queries run, and checks that queries, the
// series and label values leave the samples out at once, after a crash
// that follows the delete, after a restart, after the head is compacted
// and once the blocks are rewritten without them.
func TestDelete(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, func(o *Options) { o.Head.CheckpointOnClose = false })
	want := map[string][]string{}
	writeData(t, db, 0, 10*testRange, 10*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(db.Blocks()); n != 9 {
		t.Fatalf("%d blocks, want 9", n)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				readAll(t, db, math.MinInt64, math.MaxInt64)
				seriesNames(t, db, math.MinInt64, math.MaxInt64)
			}
		}
	})
	eq := func(name, value string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, name, value) }
	for _, d := range []struct {
		ms         []*labels.Matcher
		key        string
		mint, maxt int64
	}{
		{[]*labels.Matcher{eq("__name__", "m"), eq("i", "0")}, `{__name__="m", i="0"}`, math.MinInt64, math.MaxInt64},
		{[]*labels.Matcher{eq("i", "2")}, `{__name__="m", i="2"}`, 2500, 9500},
		{[]*labels.Matcher{eq("__name__", "h")}, `{__name__="h"}`, 9100, 9200},
		{[]*labels.Matcher{eq("__name__", "fh")}, `{__name__="fh"}`, 3000, 3999},
	} {
		if err := db.Delete(context.Background(), d.mint, d.maxt, d.ms...); err != nil {
			t.Fatal(err)
		}
		deleteFrom(want, d.key, d.mint, d.maxt)
		assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	}
	close(stop)
	wg.Wait()
	check := func(when string) {
		t.Helper()
		assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
		names, vals := seriesNames(t, db, math.MinInt64, math.MaxInt64)
		if len(names) != len(want) || slices.Contains(names, `{__name__="m", i="0"}`) {
			t.Errorf("%s: series %v, want those of %d without i=0", when, names, len(want))
		}
		if slices.Contains(vals, "0") || !slices.Contains(vals, "2") {
			t.Errorf("%s: values of i %v, want 2 and not 0", when, vals)
		}
		// Within the range deleted of i=2, the series is gone too.
		if names, _ := seriesNames(t, db, 3000, 3999); slices.Contains(names, `{__name__="m", i="2"}`) {
			t.Errorf("%s: series in [3000, 3999] %v hold i=2", when, names)
		}
	}
	check("after the deletes")
	// A sample after the delete, newer than those deleted, is kept.
	app := db.Appender(context.Background())
	l0 := labels.FromStrings("__name__", "m", "i", "0")
	if _, err := app.Append(0, l0, storage.Sample{T: 9995, V: 7}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	want[l0.String()] = []string{"9995:7"}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
	delete(want, l0.String())
	if err := db.Delete(context.Background(), math.MinInt64, math.MaxInt64, eq("i", "0")); err != nil {
		t.Fatal(err)
	}

	// As if killed: the WAL stays, no checkpoint is written.
	if err := db.Head().Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	check("after a crash")
	if err := db.Close(); err != nil { // with a checkpoint
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	defer func() { db.Close() }()
	check("after a restart")

	// The head's range with the deletes is written to a block.
	writeData(t, db, 10*testRange, 12*testRange, 12*testRange, want)
	deleteFrom(want, l0.String(), math.MinInt64, math.MaxInt64)
	if err := db.Delete(context.Background(), math.MinInt64, math.MaxInt64, eq("i", "0")); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	if n := len(db.Head().Tombstones()); n != 1 {
		t.Errorf("head holds tombstones of %d series after compaction, want 1 (i=0's, in its range)", n)
	}

	withStones := 0
	for _, m := range db.Blocks() {
		if _, err := os.Stat(filepath.Join(dir, m.ULID.String(), tombstones.Filename)); err == nil {
			withStones++
		}
	}
	if withStones == 0 {
		t.Fatal("no block has a tombstones file")
	}
	before := db.Blocks()
	if err := db.CleanTombstones(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after clean_tombstones")
	for _, m := range db.Blocks() {
		if _, err := os.Stat(filepath.Join(dir, m.ULID.String(), tombstones.Filename)); err == nil {
			t.Errorf("block %s still has tombstones", m.ULID)
		}
	}
	if got := len(db.Blocks()); got != len(before) {
		t.Errorf("%d blocks after clean_tombstones, want %d", got, len(before))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, nil)
	check("after clean_tombstones and a restart")
}

// TestCleanTombstonesDropsEmptiedBlock checks that a block whose every
// sample was deleted is removed, not rewritten as an empty block.
func TestCleanTombstonesDropsEmptiedBlock(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir, nil)
	defer func() { db.Close() }()
	want := map[string][]string{}
	writeData(t, db, 0, 4*testRange, 4*testRange, want)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	before := db.Blocks()
	if len(before) < 2 {
		t.Fatalf("%d blocks, want at least 2", len(before))
	}
	first := before[0]
	if err := db.Delete(context.Background(), first.MinTime, first.MaxTime, matchAll); err != nil {
		t.Fatal(err)
	}
	if err := db.CleanTombstones(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := db.Blocks()
	if len(after) != len(before)-1 || slices.ContainsFunc(after, func(m block.Meta) bool { return m.MinTime == first.MinTime }) {
		t.Fatalf("blocks after clean_tombstones %v, want those of %v without the first", after, before)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs int
	for _, e := range entries {
		if _, err := ulid.Parse(e.Name()); err == nil && e.IsDir() {
			dirs++
		}
	}
	if dirs != len(after) {
		t.Errorf("%d block directories, want %d", dirs, len(after))
	}
	for key := range want {
		deleteFrom(want, key, first.MinTime, first.MaxTime)
	}
	assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
}
