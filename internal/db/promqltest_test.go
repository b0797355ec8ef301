package db

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/promtests"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs/crashfs"
)

// testEngine returns Prometheus' engine set up for Prometheus' test file
// name: with the features its expectations assume.
func testEngine(t *testing.T, name string) *promql.Engine {
	return promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples:               50000000,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		// Their warnings name the metric, which needs __name__ kept.
		EnableDelayedNameRemoval: name == "name_label_dropping.test" || name == "histograms.test" || name == "native_histograms.test",
		UseStartTimestamps:       name == "start_timestamps.test",
		Parser:                   parser.NewParser(promqltest.TestParserOpts),
	})
}

// singleSourceHints are the files of Prometheus' tests that expect a
// native histogram's counter-reset hint, at the first sample a query
// reads of a series, to be the one of a single source: Prometheus' test
// storage holds everything in its head. Read from blocks and the head,
// strata says unknown there, as Prometheus' merge of blocks and head
// (storage.chainSampleIterator) does.
var singleSourceHints = map[string]bool{"native_histograms.test": true, "range_queries.test": true}

// TestPromQLSuite runs Prometheus' own PromQL tests with the samples
// stored in a DB: every answer, warning and info must be the one
// Prometheus' test storage gives, so what the store hands the engine
// (values, native histograms with their counter-reset hints, start
// times, staleness markers) must be Prometheus' to the bit. Each file
// runs over the head alone and, but singleSourceHints, over blocks of
// two minutes merged up to six and the head's last minutes: a block must
// keep what its samples need (start times too), and a query read them
// across blocks and the head. Only type_and_unit.test is left out: it
// needs Prometheus' type-and-unit labels, which strata does not offer.
func TestPromQLSuite(t *testing.T) {
	tests := promtests.Files(t)
	for name := range singleSourceHints {
		if _, ok := tests[name]; !ok {
			t.Errorf("%s is no longer among Prometheus' tests", name)
		}
	}
	if _, ok := tests["type_and_unit.test"]; !ok {
		t.Error("type_and_unit.test is no longer among Prometheus' tests")
	}
	delete(tests, "type_and_unit.test")
	var seen blocksSeen
	for name, test := range tests {
		for _, blocks := range []bool{false, true} {
			if blocks && singleSourceHints[name] {
				continue
			}
			t.Run(fmt.Sprintf("%s/blocks=%v", name, blocks), func(t *testing.T) {
				promqltest.RunTestWithStorage(t, test, testEngine(t, name), func(t testing.TB) promstorage.Storage {
					return openPromStorage(t, blocks, &seen)
				})
			})
		}
	}
	// The files' loads span minutes to hours: most of their samples must
	// have been read from blocks, many merged.
	if seen.blocks < 500 || seen.merged < 100 {
		t.Errorf("%d blocks written, %d of them merged", seen.blocks, seen.merged)
	}
}

// openPromStorage opens a DB in memory as a Prometheus storage; with
// blocks, of two-minute blocks merged up to six, each commit followed by
// a compaction that seen counts the blocks of.
func openPromStorage(t testing.TB, blocks bool, seen *blocksSeen) promStorage {
	opts := DefaultOptions()
	opts.Dir = "data"
	opts.FS = crashfs.New() // in memory: the files' loads write hundreds of blocks
	opts.CompactionInterval = 0
	opts.RetentionTime = 0
	if blocks {
		opts.Head.BlockRange = 2 * time.Minute.Milliseconds()
		opts.MaxBlockDuration = 6 * time.Minute
		// Prometheus' test files load each series' samples one after
		// another, into ranges the series before were written to blocks
		// from: they are taken as late samples.
		opts.Head.OutOfOrderWindow = 365 * 24 * time.Hour.Milliseconds()
	}
	store := Open(opts)
	if err := store.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return promStorage{db: store, compact: blocks, seen: seen}
}

// promStorage is a DB as promqltest takes a storage: it loads a test's
// samples through AppenderV2, the appender that carries start times, and
// queries through Querier. With compact, each commit is followed by a
// compaction.
type promStorage struct {
	db      *DB
	compact bool
	seen    *blocksSeen
}

// blocksSeen counts the blocks the compactions after commits left.
type blocksSeen struct{ blocks, merged int }

func (s promStorage) Querier(mint, maxt int64) (promstorage.Querier, error) {
	return s.db.Querier(mint, maxt)
}

func (s promStorage) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return promAppender{app: s.db.Appender(ctx), db: s.db, compact: s.compact, seen: s.seen}
}

func (promStorage) StartTime() (int64, error) { return math.MinInt64, nil }

func (s promStorage) Close() error { return s.db.Close() }

// promqltest uses neither of these.
func (promStorage) Appender(context.Context) promstorage.Appender { panic("not used") }
func (promStorage) ChunkQuerier(int64, int64) (promstorage.ChunkQuerier, error) {
	panic("not used")
}

type promAppender struct {
	app     storage.Appender
	db      *DB
	compact bool
	seen    *blocksSeen
}

func (a promAppender) Append(ref promstorage.SeriesRef, lset labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ promstorage.AppendV2Options) (promstorage.SeriesRef, error) {
	r, err := a.app.Append(storage.SeriesRef(ref), lset, storage.Sample{T: t, V: v, H: h, FH: fh, ST: st})
	return promstorage.SeriesRef(r), err
}

func (a promAppender) Commit() error {
	if err := a.app.Commit(); err != nil || !a.compact {
		return err
	}
	if err := a.db.Compact(); err != nil {
		return err
	}
	for _, m := range a.db.Blocks() {
		a.seen.blocks++
		if m.Level > 1 {
			a.seen.merged++
		}
	}
	return nil
}

func (a promAppender) Rollback() error { return a.app.Rollback() }
