package db

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/storage"
)

// TestStartTimestampsPromQL runs Prometheus' own tests of rate, increase,
// irate and resets over start timestamps (promqltest's
// start_timestamps.test) with the samples stored in a DB: the answers
// depend on the start time the store gives back for every sample.
func TestStartTimestampsPromQL(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		t.Fatalf("find the prometheus module: %v", err)
	}
	test, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "promql", "promqltest", "testdata", "start_timestamps.test"))
	if err != nil {
		t.Fatal(err)
	}
	engine := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples:               50000000,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		UseStartTimestamps:       true,
		Parser:                   parser.NewParser(promqltest.TestParserOpts),
	})
	promqltest.RunTestWithStorage(t, string(test), engine, func(t testing.TB) promstorage.Storage {
		opts := DefaultOptions()
		opts.Dir = t.TempDir()
		opts.CompactionInterval = 0
		store := Open(opts)
		if err := store.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		return promStorage{store}
	})
}

// promStorage is a DB as promqltest takes a storage: it loads a test's
// samples through AppenderV2, the appender that carries start times, and
// queries through Querier.
type promStorage struct{ db *DB }

func (s promStorage) Querier(mint, maxt int64) (promstorage.Querier, error) {
	return s.db.Querier(mint, maxt)
}

func (s promStorage) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return promAppender{s.db.Appender(ctx)}
}

func (promStorage) StartTime() (int64, error) { return math.MinInt64, nil }

func (s promStorage) Close() error { return s.db.Close() }

// promqltest uses neither of these.
func (promStorage) Appender(context.Context) promstorage.Appender { panic("not used") }
func (promStorage) ChunkQuerier(int64, int64) (promstorage.ChunkQuerier, error) {
	panic("not used")
}

type promAppender struct{ app storage.Appender }

func (a promAppender) Append(ref promstorage.SeriesRef, lset labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ promstorage.AppendV2Options) (promstorage.SeriesRef, error) {
	r, err := a.app.Append(storage.SeriesRef(ref), lset, storage.Sample{T: t, V: v, H: h, FH: fh, ST: st})
	return promstorage.SeriesRef(r), err
}

func (a promAppender) Commit() error   { return a.app.Commit() }
func (a promAppender) Rollback() error { return a.app.Rollback() }
