package rollup

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/teststorage"

	"github.com/strata-db/strata/internal/promtests"
)

// newPromEngine returns Prometheus' engine as strata's server sets it up.
func newPromEngine(t testing.TB, maxSamples int) *promql.Engine {
	return newPromEngineST(t, maxSamples, false)
}

// newPromEngineST returns Prometheus' engine as strata's server sets it
// up, using start timestamps if startTimes is set
// (--enable-feature=use-start-timestamps).
func newPromEngineST(t testing.TB, maxSamples int, startTimes bool) *promql.Engine {
	return promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		UseStartTimestamps:       startTimes,
		MaxSamples:               maxSamples,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		Parser:                   parser.NewParser(promqltest.TestParserOpts),
	})
}

// needsFeatures are the files of Prometheus' tests that fail on
// Prometheus' engine as strata's server sets it up, for features it
// leaves off by default: delayed __name__ removal, start timestamps in
// rate and increase (TestBuiltinStartTimestamps turns them on), and
// type and unit labels.
var needsFeatures = map[string]bool{
	"histograms.test":          true,
	"name_label_dropping.test": true,
	"native_histograms.test":   true,
	"start_timestamps.test":    true,
	"type_and_unit.test":       true,
}

// TestBuiltin runs Prometheus' own PromQL tests through Engine: every
// answer, and every warning and info, must be what Prometheus' engine
// gives.
func TestBuiltin(t *testing.T) {
	tests := promtests.Files(t)
	for name := range needsFeatures {
		if _, ok := tests[name]; !ok {
			t.Errorf("%s is no longer among Prometheus' tests", name)
		}
	}
	var taken int64
	for name, content := range tests {
		if needsFeatures[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			const maxSamples = 50000000
			e := New(Options{Engine: newPromEngine(t, maxSamples), Parser: parser.NewParser(promqltest.TestParserOpts), MaxSamples: maxSamples})
			promqltest.RunTest(t, content, e)
			taken += e.taken.Load()
		})
	}
	// The tests' range queries over rates and increases are many: 51
	// took the path at Prometheus v0.315.
	t.Logf("%d queries evaluated inners here", taken)
	if taken < 40 {
		t.Errorf("%d queries evaluated inners", taken)
	}
}

// TestBuiltinStartTimestamps runs Prometheus' tests of start timestamps
// through Engine with --enable-feature=use-start-timestamps: rate,
// increase, irate and resets then read the samples' start times, which
// the rollup does not, so they must be left to Prometheus' engine.
func TestBuiltinStartTimestamps(t *testing.T) {
	const maxSamples = 50000000
	e := New(Options{Engine: newPromEngineST(t, maxSamples, true), Parser: parser.NewParser(promqltest.TestParserOpts), MaxSamples: maxSamples, UseStartTimestamps: true})
	// Prometheus' storage keeps start timestamps as its own tests of
	// them set it up.
	promqltest.RunTestWithStorage(t, promtests.Files(t)["start_timestamps.test"], e, func(t testing.TB) promstorage.Storage {
		return teststorage.New(t, func(opts *tsdb.Options) {
			opts.EnableSTStorage = true
			opts.FloatChunkEncoding = promchunkenc.EncXOR2
			opts.EnableHistogramSTEncoding = true
		})
	})
}
