package promstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/db"
)

// BenchmarkScrapeAppend appends one scrape of a target's 1,000 series
// (10 families of 100) per op through AppenderV2, as the scrape loop
// does on its steady path: with the series references its cache kept
// from the last scrape, each sample's family metadata passed along, and
// one Commit, which writes the WAL to disk as a server does.
//
//	go test ./internal/promstore -run '^$' -bench BenchmarkScrapeAppend -benchmem -count 6 | benchstat -
func BenchmarkScrapeAppend(b *testing.B) {
	opts := db.DefaultOptions()
	opts.Dir = b.TempDir()
	opts.CompactionInterval = 0
	opts.RetentionTime = 0
	store := db.Open(opts)
	if err := store.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const families, perFamily = 10, 100
	type series struct {
		ls     labels.Labels
		family string
		ref    promstorage.SeriesRef
	}
	var ss []series
	for f := range families {
		name := fmt.Sprintf("app_family_%d_total", f)
		for i := range perFamily {
			ss = append(ss, series{ls: labels.FromStrings("__name__", name, "instance", "10.0.0.1:9100", "job", "node", "path", fmt.Sprintf("/p%d", i)), family: name})
		}
	}
	meta := metadata.Metadata{Type: model.MetricTypeCounter, Help: "Things done."}
	app := AppendableV2(store)
	scrape := func(t int64) {
		a := app.AppenderV2(context.Background())
		for i := range ss {
			ref, err := a.Append(ss[i].ref, ss[i].ls, 0, t, float64(t), nil, nil, promstorage.AppendV2Options{MetricFamilyName: ss[i].family, Metadata: meta})
			if err != nil {
				b.Fatal(err)
			}
			ss[i].ref = ref
		}
		if err := a.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	scrape(0) // creates the series
	b.ReportAllocs()
	t := int64(0)
	for b.Loop() {
		t += 15000
		scrape(t)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/sample")
}
