package head

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// BenchmarkSelect measures the head's read path: matchers to postings to
// Select to iterating the samples, over 10k series of node-exporter-like
// labels with 120 samples each, for matchers of each kind.
//
//	go test ./internal/head -run NONE -bench BenchmarkSelect -benchmem -count=6 | benchstat -
func BenchmarkSelect(b *testing.B) {
	h := openBenchHead(b)
	const nseries = 10_000
	lsets := make([]labels.Labels, nseries)
	for i := range lsets {
		lsets[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%100), "instance", fmt.Sprintf("host-%d:9100", i/100),
			"job", "node", "cpu", fmt.Sprint(i%8), "mode", []string{"idle", "user", "system"}[i%3])
	}
	for ts := int64(0); ts < 120*15_000; ts += 15_000 {
		app := h.Appender(context.Background())
		for i, l := range lsets {
			if _, err := app.Append(0, l, sampleOf(ts, float64(ts)*float64(i))); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
	}{
		{"equal", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7")}},
		{"regex", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-[1-4].*")}},
		{"not-equal", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchNotEqual, "mode", "idle")}},
		{"regex-all", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "instance", ".*9100")}},
	} {
		b.Run("match="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var it promchunkenc.Iterator
			for b.Loop() {
				q, err := h.Querier(math.MinInt64, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				ss := q.Select(context.Background(), true, nil, tc.ms...)
				for ss.Next() {
					it = ss.At().Iterator(it)
					for it.Next() != promchunkenc.ValNone {
					}
				}
				if ss.Err() != nil {
					b.Fatal(ss.Err())
				}
				q.Close()
			}
		})
	}
}

// BenchmarkLabelsDeleted measures label names and values asked without
// matchers while a series of 100k is deleted, the case that reads the
// index and looks again only at the deleted series' labels.
//
//	go test ./internal/head -run NONE -bench BenchmarkLabelsDeleted -benchmem -count=6 | benchstat -
func BenchmarkLabelsDeleted(b *testing.B) {
	h := openBenchHead(b)
	const nseries = 100_000
	app := h.Appender(context.Background())
	for i := range nseries {
		l := labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%100), "instance", fmt.Sprintf("host-%d:9100", i/100), "job", "node")
		if _, err := app.Append(0, l, sampleOf(1000, 1)); err != nil {
			b.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := h.Delete(context.Background(), math.MinInt64, math.MaxInt64,
		labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchEqual, "instance", "host-3:9100")); err != nil {
		b.Fatal(err)
	}
	q, err := h.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	b.Run("values", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vals, _, err := q.LabelValues(context.Background(), "instance", nil); err != nil || len(vals) != nseries/100 {
				b.Fatalf("%d values, %v", len(vals), err)
			}
		}
	})
	b.Run("names", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if names, _, err := q.LabelNames(context.Background(), nil); err != nil || len(names) != 3 {
				b.Fatalf("names %v, %v", names, err)
			}
		}
	})
}
