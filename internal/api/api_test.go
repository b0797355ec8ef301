package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	stratastorage "github.com/strata-db/strata/internal/storage"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// step is the fixture's sample interval; fixture series have samples
// every step from 0 to 10 minutes unless they say otherwise.
const step = 15 * time.Second

// testHistogram is the native histogram sample of the fixture. It has an
// empty negative bucket, which the JSON must leave out, and buckets of
// every boundary kind: the zero bucket is closed, positive buckets are
// open below and negative ones open above.
func testHistogram() *histogram.FloatHistogram {
	return &histogram.FloatHistogram{
		Schema:          0,
		ZeroThreshold:   0.001,
		ZeroCount:       1,
		Count:           11,
		Sum:             25.5,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 3}},
		PositiveBuckets: []float64{2, 3, 4},
		NegativeSpans:   []histogram.Span{{Offset: 0, Length: 2}},
		NegativeBuckets: []float64{0, 1},
	}
}

// series returns a fixture series from from to to (inclusive) with
// values f(i) for the i-th sample.
func series(lset labels.Labels, from, to time.Duration, f func(i int) float64) fakeSeries {
	var fs fakeSeries
	fs.lset = lset
	for i, t := 0, from; t <= to; i, t = i+1, t+step {
		fs.samples = append(fs.samples, fakeSample{t: t.Milliseconds(), f: f(i)})
	}
	return fs
}

// three is a variable so that 1/three is computed in float64, not as an
// exact constant.
var three = 3.0

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func fixture() *fakeStorage {
	const end = 10 * time.Minute
	hist := fakeSeries{lset: labels.FromStrings("__name__", "request_duration_seconds", "job", "api")}
	for t := time.Duration(0); t <= end; t += step {
		hist.samples = append(hist.samples, fakeSample{t: t.Milliseconds(), fh: testHistogram()})
	}
	return newFakeStorage(
		series(labels.FromStrings("__name__", "up", "job", "api", "instance", "a"), 0, end, constant(1)),
		series(labels.FromStrings("__name__", "up", "job", "api", "instance", "b"), 0, end, constant(0)),
		series(labels.FromStrings("__name__", "up", "job", "db", "instance", "c"), 0, end, constant(1)),
		series(labels.FromStrings("__name__", "http_requests_total", "job", "api", "code", "200"), 0, end, func(i int) float64 { return float64(10 * i) }),
		series(labels.FromStrings("__name__", "http_requests_total", "job", "api", "code", "500"), 0, end, func(i int) float64 { return float64(i) }),
		series(labels.FromStrings("__name__", "temperature", "room", "kitchen"), 0, end, func(i int) float64 { return 21.5 + float64(i%4)/4 }),
		series(labels.FromStrings("__name__", "special", "kind", "nan"), 0, end, constant(math.NaN())),
		series(labels.FromStrings("__name__", "special", "kind", "pos_inf"), 0, end, constant(math.Inf(1))),
		series(labels.FromStrings("__name__", "special", "kind", "neg_inf"), 0, end, constant(math.Inf(-1))),
		series(labels.FromStrings("__name__", "special", "kind", "tiny"), 0, end, constant(1e-7)),
		series(labels.FromStrings("__name__", "special", "kind", "huge"), 0, end, constant(1e21)),
		series(labels.FromStrings("__name__", "special", "kind", "third"), 0, end, func(int) float64 { return 1 / three }),
		series(labels.FromStrings("__name__", "escape_test", "value", "<a href=\"x\">&\n\t\\</a>\u2028\x01"), 0, end, constant(1)),
		series(labels.FromStrings("__name__", "my.metric", "dotted.label", "x"), 0, end, constant(1)),
		series(labels.FromStrings("__name__", "old", "job", "old"), 0, time.Minute, constant(1)),
		hist,
	)
}

// testEngineTimeout is the test engine's own bound on a query: long
// enough never to fire in a passing test, short enough that a test whose
// own timeout failed to apply ends in reasonable time.
const testEngineTimeout = 10 * time.Second

func newTestEngine(p parser.Parser) *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:           1e6,
		Timeout:              testEngineTimeout,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		EnablePerStepStats:   true,
		Parser:               p,
	})
}

// newTestAPI serves store behind a mux. The clock is fixed at 5 minutes
// into the fixture, so an instant query without time is deterministic.
// fakeExemplars is an ExemplarQueryable over fixed results; it honours
// matchers and the time range.
type fakeExemplars []exemplar.QueryResult

func (f fakeExemplars) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return f, nil
}

func (f fakeExemplars) Select(start, end int64, sets ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	out := []exemplar.QueryResult{}
	for _, qr := range f {
		for _, set := range sets {
			ok := true
			for _, m := range set {
				ok = ok && m.Matches(qr.SeriesLabels.Get(m.Name))
			}
			if !ok {
				continue
			}
			var es []exemplar.Exemplar
			for _, e := range qr.Exemplars {
				if e.Ts >= start && e.Ts <= end {
					es = append(es, e)
				}
			}
			if len(es) > 0 {
				out = append(out, exemplar.QueryResult{SeriesLabels: qr.SeriesLabels, Exemplars: es})
			}
			break
		}
	}
	return out, nil
}

// fakeMetadata is a MetadataSource over a map.
type fakeMetadata map[string]stratastorage.Metadata

func (f fakeMetadata) Metadata(metric string) map[string]stratastorage.Metadata {
	out := map[string]stratastorage.Metadata{}
	for k, v := range f {
		if metric == "" || metric == k {
			out[k] = v
		}
	}
	return out
}

func newTestAPI(store *fakeStorage, configure func(*Options)) http.Handler {
	p := parser.NewParser(parser.Options{})
	opts := DefaultOptions()
	opts.Engine = newTestEngine(p)
	opts.Queryable = store
	opts.Parser = p
	opts.Now = func() time.Time { return time.Unix(300, 0) }
	opts.Version = "0.1.0-test"
	if configure != nil {
		configure(&opts)
	}
	mux := http.NewServeMux()
	New(opts).Register(mux)
	return mux
}

// do sends a request; body, if not empty, is sent as a urlencoded form.
func do(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// q builds a URL query from name, value pairs.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}

type goldenCase struct {
	name   string
	method string // GET if empty
	path   string
	query  string // URL query
	form   string // urlencoded POST body
	store  func(*fakeStorage)
	opts   func(*Options)
	status int
}

func goldenCases() []goldenCase {
	warnStore := func(s *fakeStorage) {
		s.warnings = annotations.New().Add(errors.New("storage warning: some data is <unavailable>"))
	}
	reverse := func(s *fakeStorage) { s.reverse = true }
	withMetadata := func(o *Options) {
		o.Metadata = fakeMetadata{
			"http_requests_total": {Type: "counter", Help: "Requests served, by \"code\".", Unit: ""},
			"temperature":         {Type: "gauge", Help: "Room temperature.", Unit: "celsius"},
			"untyped":             {},
		}
	}
	withExemplars := func(o *Options) {
		o.Exemplars = fakeExemplars{{
			SeriesLabels: labels.FromStrings("__name__", "rpc_duration_seconds_bucket", "le", "0.5", "job", "api"),
			Exemplars: []exemplar.Exemplar{
				{Labels: labels.FromStrings("trace_id", "abc"), Value: 0.31, Ts: 100_500, HasTs: true},
				{Labels: labels.FromStrings("trace_id", "def"), Value: 0.42, Ts: 200_000, HasTs: true},
			},
		}}
	}
	return append(append(rulesGoldenCases(), targetsGoldenCases()...), []goldenCase{
		// Exemplars.
		{name: "exemplars", path: "/api/v1/query_exemplars", query: q("query", `histogram_quantile(0.9, rate(rpc_duration_seconds_bucket{job="api"}[5m]))`, "start", "0", "end", "300"), opts: withExemplars, status: 200},
		{name: "exemplars_time_range", path: "/api/v1/query_exemplars", query: q("query", "rpc_duration_seconds_bucket", "start", "150", "end", "300"), opts: withExemplars, status: 200},
		{name: "exemplars_no_match", path: "/api/v1/query_exemplars", query: q("query", `rpc_duration_seconds_bucket{job="db"}`), opts: withExemplars, status: 200},
		{name: "exemplars_no_selector", path: "/api/v1/query_exemplars", query: q("query", "1+1"), opts: withExemplars, status: 200},
		{name: "exemplars_post", method: "POST", path: "/api/v1/query_exemplars", form: q("query", "rpc_duration_seconds_bucket"), opts: withExemplars, status: 200},
		{name: "exemplars_bad_query", path: "/api/v1/query_exemplars", query: q("query", "sum("), opts: withExemplars, status: 400},
		{name: "exemplars_end_before_start", path: "/api/v1/query_exemplars", query: q("query", "up", "start", "10", "end", "5"), opts: withExemplars, status: 400},
		// Metric metadata.
		{name: "metadata_all", path: "/api/v1/metadata", opts: withMetadata, status: 200},
		{name: "metadata_metric", path: "/api/v1/metadata", query: q("metric", "temperature"), opts: withMetadata, status: 200},
		{name: "metadata_unknown_metric", path: "/api/v1/metadata", query: q("metric", "nope"), opts: withMetadata, status: 200},
		{name: "metadata_limit", path: "/api/v1/metadata", query: q("limit", "1"), opts: withMetadata, status: 200},
		{name: "metadata_limit_per_metric", path: "/api/v1/metadata", query: q("limit_per_metric", "1"), opts: withMetadata, status: 200},
		{name: "metadata_bad_limit", path: "/api/v1/metadata", query: q("limit", "x"), opts: withMetadata, status: 400},
		{name: "metadata_none", path: "/api/v1/metadata", status: 200},
		// Instant queries.
		{name: "query_vector", path: "/api/v1/query", query: q("query", "up", "time", "300"), status: 200},
		{name: "query_vector_default_time", path: "/api/v1/query", query: q("query", "sum by (job) (up)"), status: 200},
		{name: "query_vector_rfc3339_time", path: "/api/v1/query", query: q("query", "up{job=\"db\"}", "time", "1970-01-01T00:05:00.5Z"), status: 200},
		{name: "query_vector_fraction_time", path: "/api/v1/query", query: q("query", "up{job=\"db\"}", "time", "300.0456"), status: 200},
		{name: "query_vector_empty", path: "/api/v1/query", query: q("query", "nonexistent", "time", "300"), status: 200},
		{name: "query_vector_histogram", path: "/api/v1/query", query: q("query", "request_duration_seconds", "time", "300"), status: 200},
		{name: "query_special_values", path: "/api/v1/query", query: q("query", "special", "time", "300"), status: 200},
		{name: "query_escaping", path: "/api/v1/query", query: q("query", "escape_test", "time", "300"), status: 200},
		{name: "query_utf8_names", path: "/api/v1/query", query: q("query", `{"my.metric"}`, "time", "300"), status: 200},
		{name: "query_scalar", path: "/api/v1/query", query: q("query", "scalar(sum(up))", "time", "300.5"), status: 200},
		{name: "query_string", path: "/api/v1/query", query: q("query", `"hello <world>"`, "time", "300"), status: 200},
		{name: "query_matrix", path: "/api/v1/query", query: q("query", `up{job="db"}[1m]`, "time", "300"), status: 200},
		{name: "query_matrix_histogram", path: "/api/v1/query", query: q("query", `request_duration_seconds[30s]`, "time", "300"), status: 200},
		{name: "query_limit", path: "/api/v1/query", query: q("query", "up", "time", "300", "limit", "2"), status: 200},
		{name: "query_limit_not_reached", path: "/api/v1/query", query: q("query", "up", "time", "300", "limit", "3"), status: 200},
		{name: "query_info_annotation", path: "/api/v1/query", query: q("query", "rate(temperature[5m])", "time", "300"), status: 200},
		{name: "query_storage_warning", path: "/api/v1/query", query: q("query", "up", "time", "300"), store: warnStore, status: 200},
		{name: "query_lookback_delta_default", path: "/api/v1/query", query: q("query", "up", "time", "800"), status: 200},
		{name: "query_lookback_delta_param", path: "/api/v1/query", query: q("query", "up", "time", "800", "lookback_delta", "1m"), status: 200},
		{name: "query_lookback_delta_option", path: "/api/v1/query", query: q("query", "up", "time", "800"), opts: func(o *Options) { o.LookbackDelta = time.Minute }, status: 200},
		{name: "query_lookback_delta_param_overrides_option", path: "/api/v1/query", query: q("query", "up", "time", "800", "lookback_delta", "5m"), opts: func(o *Options) { o.LookbackDelta = time.Minute }, status: 200},
		{name: "query_post_form", method: "POST", path: "/api/v1/query", form: q("query", "up", "time", "300"), status: 200},
		{name: "query_post_form_and_url", method: "POST", path: "/api/v1/query", query: q("time", "300"), form: q("query", `up{job="db"}`), status: 200},

		// Range queries.
		{name: "query_range", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60", "step", "15"), status: 200},
		{name: "query_range_duration_step", path: "/api/v1/query_range", query: q("query", `sum(rate(http_requests_total[1m]))`, "start", "1970-01-01T00:01:00Z", "end", "1970-01-01T00:03:00Z", "step", "1m"), status: 200},
		{name: "query_range_fraction", path: "/api/v1/query_range", query: q("query", `up{job="db"}`, "start", "0.5", "end", "3", "step", "0.75"), status: 200},
		{name: "query_range_histogram", path: "/api/v1/query_range", query: q("query", "request_duration_seconds", "start", "0", "end", "30", "step", "15"), status: 200},
		{name: "query_range_scalar", path: "/api/v1/query_range", query: q("query", "time()", "start", "0", "end", "30", "step", "15"), status: 200},
		{name: "query_range_limit", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "30", "step", "15", "limit", "1"), status: 200},
		{name: "query_range_post_form", method: "POST", path: "/api/v1/query_range", form: q("query", `up{job="db"}`, "start", "0", "end", "30", "step", "15"), status: 200},

		// Bad requests: instant queries.
		{name: "query_missing_query", path: "/api/v1/query", query: q("time", "300"), status: 400},
		{name: "query_parse_error", path: "/api/v1/query", query: q("query", "up{", "time", "300"), status: 400},
		{name: "query_bad_time", path: "/api/v1/query", query: q("query", "up", "time", "yesterday"), status: 400},
		{name: "query_nan_time", path: "/api/v1/query", query: q("query", "up", "time", "NaN"), status: 400},
		{name: "query_bad_timeout", path: "/api/v1/query", query: q("query", "up", "timeout", "soon"), status: 400},
		{name: "query_bad_lookback_delta", path: "/api/v1/query", query: q("query", "up", "lookback_delta", "x"), status: 400},
		{name: "query_bad_limit", path: "/api/v1/query", query: q("query", "up", "limit", "ten"), status: 400},
		{name: "query_negative_limit", path: "/api/v1/query", query: q("query", "up", "limit", "-1"), status: 400},

		// Bad requests: range queries.
		{name: "query_range_missing_start", path: "/api/v1/query_range", query: q("query", "up", "end", "60", "step", "15"), status: 400},
		{name: "query_range_bad_start", path: "/api/v1/query_range", query: q("query", "up", "start", "x", "end", "60", "step", "15"), status: 400},
		{name: "query_range_missing_end", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "step", "15"), status: 400},
		{name: "query_range_end_before_start", path: "/api/v1/query_range", query: q("query", "up", "start", "60", "end", "0", "step", "15"), status: 400},
		{name: "query_range_missing_step", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60"), status: 400},
		{name: "query_range_bad_step", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60", "step", "often"), status: 400},
		{name: "query_range_overflowing_step", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60", "step", "1e300"), status: 400},
		{name: "query_range_zero_step", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60", "step", "0"), status: 400},
		{name: "query_range_negative_step", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "60", "step", "-15"), status: 400},
		{name: "query_range_too_many_points", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "11001", "step", "1"), status: 400},
		{name: "query_range_max_points", path: "/api/v1/query_range", query: q("query", "vector(1)", "start", "0", "end", "11000", "step", "1000"), status: 200},
		{name: "query_range_matrix_expression", path: "/api/v1/query_range", query: q("query", "up[1m]", "start", "0", "end", "60", "step", "15"), status: 400},
		{name: "query_range_parse_error", path: "/api/v1/query_range", query: q("query", "sum(", "start", "0", "end", "60", "step", "15"), status: 400},

		// Execution errors.
		{name: "query_duplicate_labelset", path: "/api/v1/query", query: q("query", `label_replace(up{job="api"}, "instance", "x", "", "")`, "time", "300"), status: 422},
		{name: "query_range_duplicate_labelset", path: "/api/v1/query_range", query: q("query", `label_replace(up{job="api"}, "instance", "x", "", "")`, "start", "0", "end", "30", "step", "15"), status: 422},

		// Series.
		{name: "series_one_match", path: "/api/v1/series", query: q("match[]", "up"), status: 200},
		{name: "series_union", path: "/api/v1/series", query: q("match[]", `up{job="api"}`, "match[]", `{instance="c"}`, "match[]", `up{instance="a"}`), status: 200},
		{name: "series_time_range", path: "/api/v1/series", query: q("match[]", `{job=~"old|db"}`, "start", "120", "end", "180"), status: 200},
		{name: "series_none", path: "/api/v1/series", query: q("match[]", "nonexistent"), status: 200},
		{name: "series_limit", path: "/api/v1/series", query: q("match[]", "up", "limit", "2"), status: 200},
		{name: "series_storage_warning", path: "/api/v1/series", query: q("match[]", `up{job="db"}`), store: warnStore, status: 200},
		{name: "series_post_form", method: "POST", path: "/api/v1/series", form: q("match[]", `up{job="db"}`, "match[]", "old"), status: 200},
		{name: "series_no_match", path: "/api/v1/series", query: q("start", "0"), status: 400},
		{name: "series_bad_match", path: "/api/v1/series", query: q("match[]", "up{"), status: 400},
		{name: "series_empty_matcher", path: "/api/v1/series", query: q("match[]", `{job=~".*"}`), status: 400},
		{name: "series_bad_start", path: "/api/v1/series", query: q("match[]", "up", "start", "x"), status: 400},
		{name: "series_bad_end", path: "/api/v1/series", query: q("match[]", "up", "end", "x"), status: 400},
		{name: "series_bad_limit", path: "/api/v1/series", query: q("match[]", "up", "limit", "x"), status: 400},
		{name: "series_min_max_time", path: "/api/v1/series", query: q("match[]", "old", "start", minTimeText, "end", maxTimeText), status: 200},

		// Label names.
		{name: "labels_all", path: "/api/v1/labels", status: 200},
		{name: "labels_match", path: "/api/v1/labels", query: q("match[]", "up"), status: 200},
		{name: "labels_multi_match", path: "/api/v1/labels", query: q("match[]", "up", "match[]", "temperature"), status: 200},
		{name: "labels_time_range", path: "/api/v1/labels", query: q("start", "120", "end", "180", "match[]", `{job=~".+"}`), status: 200},
		{name: "labels_limit", path: "/api/v1/labels", query: q("limit", "2"), status: 200},
		{name: "labels_none", path: "/api/v1/labels", query: q("match[]", "nonexistent"), status: 200},
		{name: "labels_storage_warning", path: "/api/v1/labels", query: q("match[]", "old"), store: warnStore, status: 200},
		{name: "labels_post_form", method: "POST", path: "/api/v1/labels", form: q("match[]", "old"), status: 200},
		{name: "labels_unsorted_storage", path: "/api/v1/labels", query: q("match[]", "up"), store: reverse, status: 200},
		{name: "labels_bad_match", path: "/api/v1/labels", query: q("match[]", "up{"), status: 400},
		{name: "labels_empty_matcher", path: "/api/v1/labels", query: q("match[]", `{job=""}`), status: 400},
		{name: "labels_bad_start", path: "/api/v1/labels", query: q("start", "x"), status: 400},

		// Label values.
		{name: "label_values_job", path: "/api/v1/label/job/values", status: 200},
		{name: "label_values_name", path: "/api/v1/label/__name__/values", status: 200},
		{name: "label_values_match", path: "/api/v1/label/instance/values", query: q("match[]", `up{job="api"}`), status: 200},
		{name: "label_values_multi_match", path: "/api/v1/label/instance/values", query: q("match[]", `up{job="api"}`, "match[]", `up{job="db"}`, "match[]", `up{instance="a"}`), status: 200},
		{name: "label_values_time_range", path: "/api/v1/label/job/values", query: q("start", "120", "end", "180"), status: 200},
		{name: "label_values_limit", path: "/api/v1/label/job/values", query: q("limit", "1"), status: 200},
		{name: "label_values_escaping", path: "/api/v1/label/value/values", status: 200},
		{name: "label_values_utf8_name", path: "/api/v1/label/dotted.label/values", status: 200},
		{name: "label_values_escaped_name", path: "/api/v1/label/U__dotted_2e_label/values", status: 200},
		{name: "label_values_unknown", path: "/api/v1/label/nope/values", status: 200},
		{name: "label_values_unsorted_storage", path: "/api/v1/label/job/values", store: reverse, status: 200},
		{name: "label_values_multi_match_unsorted_storage", path: "/api/v1/label/job/values", query: q("match[]", "up", "match[]", "old"), store: reverse, status: 200},
		{name: "label_values_invalid_name", path: "/api/v1/label/%ff/values", status: 400},
		{name: "label_values_bad_match", path: "/api/v1/label/job/values", query: q("match[]", "up{"), status: 400},
		{name: "label_values_bad_limit", path: "/api/v1/label/job/values", query: q("limit", "-3"), status: 400},

		// Build info.
		{name: "buildinfo", path: "/api/v1/status/buildinfo", status: 200},

		// Server status, and the scrape machinery strata has not.
		{name: "flags", path: "/api/v1/status/flags", opts: func(o *Options) {
			o.Flags = map[string]string{"listen-address": ":9201", "storage.out-of-order-window": "30m", "query.timeout": "2m"}
		}, status: 200},
		{name: "flags_none", path: "/api/v1/status/flags", status: 200},
		{name: "flags_post_not_allowed", method: "POST", path: "/api/v1/status/flags", status: 405},
		{name: "config", path: "/api/v1/status/config", opts: func(o *Options) {
			o.Config = StaticConfig("storage:\n  tsdb:\n    out_of_order_time_window: 30m\n", time.Unix(300, 0))
		}, status: 200},
		{name: "format_query", path: "/api/v1/format_query", query: q("query", `sum(rate(x{a="<b>"}[5m]))by(job)`), status: 200},
		{name: "format_query_post", method: "POST", path: "/api/v1/format_query", form: q("query", "foo/bar"), status: 200},
		{name: "format_query_bad", path: "/api/v1/format_query", query: q("query", "sum("), status: 400},
		{name: "parse_query", path: "/api/v1/parse_query", query: q("query", `sum by (job) (rate(http_requests_total{code=~"5..", job!="x"}[5m] offset 1h)) / on(job) group_left(team) -teams @ 1700000000`), status: 200},
		{name: "parse_query_subquery", method: "POST", path: "/api/v1/parse_query", form: q("query", `max_over_time(histogram_quantile(0.9, foo_bucket)[1h:30s] @ end()) > bool 2.5`), status: 200},
		{name: "parse_query_bad", path: "/api/v1/parse_query", query: q("query", "sum("), status: 400},

		// TSDB status.
		{name: "tsdb_status", path: "/api/v1/status/tsdb", opts: withTSDBStatus, status: 200},
		{name: "blocks", path: "/api/v1/status/blocks", opts: withBlocks, status: 200},
		{name: "blocks_none", path: "/api/v1/status/blocks", status: 200},
		{name: "tsdb_status_limit", path: "/api/v1/status/tsdb", query: q("limit", "1"), opts: withTSDBStatus, status: 200},
		{name: "tsdb_status_no_source", path: "/api/v1/status/tsdb", status: 200},
		{name: "tsdb_status_zero_limit", path: "/api/v1/status/tsdb", query: q("limit", "0"), opts: withTSDBStatus, status: 400},
		{name: "tsdb_status_bad_limit", path: "/api/v1/status/tsdb", query: q("limit", "abc"), opts: withTSDBStatus, status: 400},
		{name: "tsdb_status_huge_limit", path: "/api/v1/status/tsdb", query: q("limit", "10001"), opts: withTSDBStatus, status: 400},
		{name: "tsdb_status_post_not_allowed", method: "POST", path: "/api/v1/status/tsdb", opts: withTSDBStatus, status: 405},

		// Methods and paths Prometheus does not serve.
		{name: "query_method_not_allowed", method: "DELETE", path: "/api/v1/query", status: 405},
		{name: "query_range_method_not_allowed", method: "PUT", path: "/api/v1/query_range", status: 405},
		{name: "label_values_post_not_allowed", method: "POST", path: "/api/v1/label/job/values", status: 405},
		{name: "buildinfo_post_not_allowed", method: "POST", path: "/api/v1/status/buildinfo", status: 405},
	}...)
}

// TestGolden sends each request and compares status, content type and
// body with testdata/<name>.golden. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			store := fixture()
			if tc.store != nil {
				tc.store(store)
			}
			h := newTestAPI(store, tc.opts)
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			target := tc.path
			if tc.query != "" {
				target += "?" + tc.query
			}
			rec := do(h, method, target, tc.form)

			if rec.Code != tc.status {
				t.Errorf("status %d, want %d; body: %s", rec.Code, tc.status, rec.Body)
			}
			if n := store.open.Load(); n != 0 {
				t.Errorf("%d queriers left open", n)
			}
			body := strings.ReplaceAll(rec.Body.String(), runtime.Version(), "GOVERSION")
			got := fmt.Sprintf("%d %s\n%s\n", rec.Code, rec.Header().Get("Content-Type"), body)
			checkGolden(t, tc.name, got)
		})
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("response differs from %s\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestGoldenFilesUsed fails on a golden file no case writes: a renamed
// case must not leave a stale file behind that nothing checks.
func TestGoldenFilesUsed(t *testing.T) {
	names := make(map[string]bool)
	for _, tc := range goldenCases() {
		if names[tc.name] {
			t.Errorf("duplicate case name %q", tc.name)
		}
		names[tc.name] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		if !names[name] {
			if *update {
				os.Remove(f)
				continue
			}
			t.Errorf("%s belongs to no test case", f)
		}
	}
}

// TestTimeouts checks that a query the storage cannot answer in time
// fails as a timeout (503), however the deadline was set, and that a
// request canceled by its client fails as canceled (499). The storage
// blocks until the query's context is done, so no test sleeps.
func TestTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		path   string
		query  string
		opts   func(*Options)
		cancel bool
		status int
		typ    string
	}{
		{
			name:   "timeout_param",
			path:   "/api/v1/query",
			query:  q("query", "up", "time", "300", "timeout", "0.001"),
			status: 503, typ: "timeout",
		},
		{
			name:   "timeout_param_range",
			path:   "/api/v1/query_range",
			query:  q("query", "up", "start", "0", "end", "60", "step", "15", "timeout", "1ms"),
			status: 503, typ: "timeout",
		},
		{
			name:   "timeout_option",
			path:   "/api/v1/query",
			query:  q("query", "up", "time", "300"),
			opts:   func(o *Options) { o.QueryTimeout = time.Millisecond },
			status: 503, typ: "timeout",
		},
		{
			// The option bounds the request: a longer timeout param does
			// not lift it.
			name:   "timeout_param_cannot_raise_option",
			path:   "/api/v1/query",
			query:  q("query", "up", "time", "300", "timeout", "1h"),
			opts:   func(o *Options) { o.QueryTimeout = time.Millisecond },
			status: 503, typ: "timeout",
		},
		{
			name:   "canceled",
			path:   "/api/v1/query",
			query:  q("query", "up", "time", "300"),
			cancel: true,
			status: 499, typ: "canceled",
		},
		{
			name:   "canceled_series",
			path:   "/api/v1/series",
			query:  q("match[]", "up"),
			cancel: true,
			status: 499, typ: "canceled",
		},
		{
			name:   "canceled_labels",
			path:   "/api/v1/labels",
			cancel: true,
			status: 499, typ: "canceled",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := fixture()
			store.block = true
			h := newTestAPI(store, func(o *Options) {
				o.QueryTimeout = 0
				if tc.opts != nil {
					tc.opts(o)
				}
			})
			start := time.Now()
			req := httptest.NewRequest(http.MethodGet, tc.path+"?"+tc.query, nil)
			if tc.cancel {
				ctx, cancel := context.WithCancel(req.Context())
				cancel()
				req = req.WithContext(ctx)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != tc.status {
				t.Errorf("status %d, want %d; body: %s", rec.Code, tc.status, rec.Body)
			}
			resp := decode(t, rec.Body.Bytes())
			if resp["status"] != "error" || resp["errorType"] != tc.typ {
				t.Errorf("got status %v, errorType %v, want error, %s", resp["status"], resp["errorType"], tc.typ)
			}
			if n := store.open.Load(); n != 0 {
				t.Errorf("%d queriers left open", n)
			}
			// A deadline as far out as the engine's own timeout means ours
			// was not applied. (A query whose deadline passed before it
			// reached the storage saw none: fine too.)
			store.mu.Lock()
			deadline := store.deadline
			store.mu.Unlock()
			if tc.cancel {
				return
			}
			if !deadline.IsZero() && deadline.Sub(start) > testEngineTimeout/2 {
				t.Errorf("storage saw deadline %v after the request started, want about 1ms", deadline.Sub(start))
			}
		})
	}
}

// TestRuntimeInfo checks /api/v1/status/runtimeinfo has Prometheus'
// fields, and the values strata knows.
func TestRuntimeInfo(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	h := newTestAPI(fixture(), func(o *Options) {
		o.StartTime = start
		o.StorageRetention = "15d or 1GiB"
	})
	rec := do(h, http.MethodGet, "/api/v1/status/runtimeinfo", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var resp struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range resp.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Prometheus 3.14's RuntimeInfo, field for field.
	want := []string{"CWD", "GODEBUG", "GOGC", "GOMAXPROCS", "GOMEMLIMIT", "corruptionCount", "goroutineCount", "hostname", "lastConfigTime", "reloadConfigSuccess", "serverTime", "startTime", "storageRetention"}
	if !slices.Equal(keys, want) {
		t.Errorf("fields %v, want %v", keys, want)
	}
	for k, v := range map[string]any{
		"startTime":           "2026-01-02T03:04:05.0000006Z",
		"lastConfigTime":      "2026-01-02T03:04:05Z",
		"serverTime":          "1970-01-01T00:05:00Z",
		"reloadConfigSuccess": true,
		"storageRetention":    "15d or 1GiB",
		"GOMAXPROCS":          float64(runtime.GOMAXPROCS(0)),
	} {
		if resp.Data[k] != v {
			t.Errorf("%s: %v, want %v", k, resp.Data[k], v)
		}
	}
}

// FuzzParseQuery sends arbitrary queries to /api/v1/parse_query: a query
// the parser takes gets its tree as JSON, any other a 400, never a panic.
//
//	go test ./internal/api -run NONE -fuzz FuzzParseQuery -fuzztime 1m
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{`sum by (job) (rate(x[5m] offset 1h))`, `a + on(b) group_left(c) -d @ start()`, `foo[5m:30s]`, `"s"`, `{"utf8.name"}`} {
		f.Add(s)
	}
	h := newTestAPI(fixture(), func(o *Options) {
		o.Parser = parser.NewParser(parser.Options{EnableExperimentalFunctions: true, ExperimentalDurationExpr: true, EnableExtendedRangeSelectors: true, EnableBinopFillModifiers: true})
	})
	f.Fuzz(func(t *testing.T, query string) {
		rec := do(h, http.MethodPost, "/api/v1/parse_query", q("query", query))
		switch {
		case rec.Code == http.StatusBadRequest:
		case rec.Code != http.StatusOK:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		case !json.Valid(rec.Body.Bytes()) || strings.Contains(rec.Body.String(), `"data":null`):
			t.Fatalf("answer %s", rec.Body)
		}
	})
}

// countingEngine counts the queries it is asked to make.
type countingEngine struct {
	promql.QueryEngine
	n int
}

func (c *countingEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	c.n++
	return c.QueryEngine.NewInstantQuery(ctx, q, opts, qs, ts)
}

func (c *countingEngine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	c.n++
	return c.QueryEngine.NewRangeQuery(ctx, q, opts, qs, start, end, step)
}

// TestRollupEngine checks that queries go to Options.Rollup unless they
// ask for statistics, which count Options.Engine's work.
func TestRollupEngine(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	engine := &countingEngine{QueryEngine: newTestEngine(p)}
	rollup := &countingEngine{QueryEngine: newTestEngine(p)}
	h := newTestAPI(newFakeStorage(), func(o *Options) {
		o.Engine, o.Rollup, o.RangeParallelism = engine, rollup, 2
	})
	for _, c := range []struct {
		target              string
		wantEngine, wantRup int
	}{
		{"/api/v1/query?" + q("query", "up"), 0, 1},
		{"/api/v1/query?" + q("query", "up", "stats", "true"), 1, 0},
		{"/api/v1/query_range?" + q("query", "up", "start", "0", "end", "600", "step", "1"), 0, 2}, // split in two
		{"/api/v1/query_range?" + q("query", "up", "start", "0", "end", "600", "step", "1", "stats", "all"), 1, 0},
	} {
		engine.n, rollup.n = 0, 0
		if rec := do(h, http.MethodGet, c.target, ""); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.target, rec.Code, rec.Body)
		}
		if engine.n != c.wantEngine || rollup.n != c.wantRup {
			t.Errorf("%s: %d queries to Engine and %d to Rollup, want %d and %d", c.target, engine.n, rollup.n, c.wantEngine, c.wantRup)
		}
	}
}
