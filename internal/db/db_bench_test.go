package db

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs/crashfs"
)

// BenchmarkSelect measures the read path, matchers to postings to Select
// to iterating every sample, over the head and over blocks: 10k series of
// node-exporter-like labels, 3 hours at a 15s interval, read whole.
//
//	go test ./internal/db -run NONE -bench BenchmarkSelect -benchmem -count=6 | benchstat -
func BenchmarkSelect(b *testing.B) {
	const (
		nseries  = 10_000
		interval = 15_000
		hours    = 3
	)
	for _, where := range []string{"head", "blocks"} {
		b.Run("from="+where, func(b *testing.B) {
			dir := b.TempDir()
			opts := DefaultOptions()
			opts.Dir = dir
			opts.CompactionInterval = 0
			opts.Head.BlockRange = time.Hour.Milliseconds()
			opts.MaxBlockDuration = time.Hour
			if where == "head" {
				// A range longer than the data keeps it all in the head.
				opts.Head.BlockRange = 24 * time.Hour.Milliseconds()
			}
			db := Open(opts)
			if err := db.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			appendNodeSeries(b, db, nseries, hours*3600_000-interval, interval)
			if err := db.Compact(); err != nil {
				b.Fatal(err)
			}
			if where == "blocks" && len(db.Blocks()) == 0 {
				b.Fatal("no blocks")
			}
			for _, tc := range []struct {
				name string
				ms   []*labels.Matcher
			}{
				{"equal", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7")}},
				{"regex", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-[1-4].*")}},
				{"not-equal", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchNotEqual, "mode", "idle")}},
			} {
				b.Run("match="+tc.name, func(b *testing.B) {
					b.ReportAllocs()
					var it promchunkenc.Iterator
					samples := 0
					for b.Loop() {
						q, err := db.Querier(math.MinInt64, math.MaxInt64)
						if err != nil {
							b.Fatal(err)
						}
						ss := q.Select(context.Background(), true, nil, tc.ms...)
						for ss.Next() {
							it = ss.At().Iterator(it)
							for it.Next() != promchunkenc.ValNone {
								samples++
							}
						}
						if ss.Err() != nil {
							b.Fatal(ss.Err())
						}
						q.Close()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(samples), "ns/sample")
				})
			}
		})
	}
}

// BenchmarkWriteBlock measures what a compaction of the head spends its
// time in: reading every series of a block range from the head
// (head.ForEachSeries) and writing them to a block (in memory, so that
// the disk's speed is not measured): 100k series of node-exporter-like
// labels, a one-hour block range at a 60 s interval, whose chunks the
// head closed when the next range began.
//
//	go test ./internal/db -run NONE -bench BenchmarkWriteBlock -benchmem -count=6 | benchstat -
func BenchmarkWriteBlock(b *testing.B) {
	const (
		nseries  = 100_000
		interval = 60_000
		span     = 3600_000
	)
	opts := DefaultOptions()
	opts.Dir = "data"
	opts.FS = crashfs.New()
	opts.CompactionInterval = 0
	opts.Head.BlockRange = span
	db := Open(opts)
	if err := db.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	appendNodeSeries(b, db, nseries, span, interval)
	h := db.Head()
	b.ReportAllocs()
	for b.Loop() {
		w, err := block.NewWriter("blocks", block.WriterOptions{MinTime: 0, MaxTime: span - 1, FS: crashfs.New()})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.ForEachSeries(0, span-1, w.AddSeries); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nseries), "ns/series")
}

// appendNodeSeries appends to db n series like a node exporter's (100
// metrics on n/100 hosts), a sample of each every interval ms from 0 to
// last, one commit a time.
func appendNodeSeries(b *testing.B, db *DB, n int, last, interval int64) {
	lsets := make([]labels.Labels, n)
	for i := range lsets {
		lsets[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%100), "instance", fmt.Sprintf("host-%d:9100", i/100),
			"job", "node", "cpu", fmt.Sprint(i%8), "mode", []string{"idle", "user", "system"}[i%3])
	}
	for ts := int64(0); ts <= last; ts += interval {
		app := db.Appender(context.Background())
		for i, l := range lsets {
			if _, err := app.Append(0, l, storage.Sample{T: ts, V: float64(ts) * float64(i)}); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
