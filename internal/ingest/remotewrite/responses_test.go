package remotewrite

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/responses")

// responseCase is one request and what must be stored after it.
type responseCase struct {
	name      string
	body      func(t *testing.T) []byte
	header    map[string]string
	opts      func(*Options)
	maxSeries int // the store's series limit; 0 for none
	wantGood  int // samples of {__name__="good", job="a"} stored afterwards
}

const v2ContentType = "application/x-protobuf;proto=io.prometheus.write.v2.Request"

// goodV1 and goodV2 are a valid series with two samples.
var goodV1 = ts([]string{"__name__", "good", "job", "a"}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 2000, Value: 2})

func v1(series ...prompb.TimeSeries) func(*testing.T) []byte {
	return func(t *testing.T) []byte { return encode(t, &prompb.WriteRequest{Timeseries: series}) }
}

// v2Series describes a 2.0 series by its labels as strings; v2 builds the
// symbols table.
type v2Series struct {
	labels     []string
	samples    []writev2.Sample
	histograms []writev2.Histogram
	help       string
	rawRefs    []uint32   // if set, used instead of labels
	exemplars  [][]string // label pairs of exemplars at the first sample's timestamp, or at 2000
}

var goodV2 = v2Series{labels: []string{"__name__", "good", "job", "a"}, samples: []writev2.Sample{{Timestamp: 1000, Value: 1}, {Timestamp: 2000, Value: 2}}}

func v2(series ...v2Series) func(*testing.T) []byte {
	return func(t *testing.T) []byte {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for _, s := range series {
			ts := writev2.TimeSeries{Samples: s.samples, Histograms: s.histograms, LabelsRefs: s.rawRefs}
			if s.rawRefs == nil {
				for _, l := range s.labels {
					ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l))
				}
			}
			ts.Metadata.HelpRef = st.Symbolize(s.help)
			for _, ex := range s.exemplars {
				e := writev2.Exemplar{Value: 0.5, Timestamp: 2000}
				if len(s.samples) > 0 {
					e.Timestamp = s.samples[0].Timestamp
				}
				for _, l := range ex {
					e.LabelsRefs = append(e.LabelsRefs, st.Symbolize(l))
				}
				ts.Exemplars = append(ts.Exemplars, e)
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		req.Symbols = st.Symbols()
		pb, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return snappy.Encode(nil, pb)
	}
}

func commonCases(good func(*testing.T) []byte) []responseCase {
	return []responseCase{
		{name: "valid", body: good, wantGood: 2},
		{name: "not snappy", body: func(*testing.T) []byte { return []byte("\xff\xff\xff\xff\xffnot snappy") }},
		{name: "not protobuf", body: func(*testing.T) []byte { return snappy.Encode(nil, []byte("\x0a\xff\xff\xff\xff\x0fgarbage")) }},
		{name: "json content type", header: map[string]string{"Content-Type": "application/json"}, body: good},
		{name: "unknown proto", header: map[string]string{"Content-Type": "application/x-protobuf;proto=foo.Bar"}, body: good},
		{name: "gzip encoding", header: map[string]string{"Content-Encoding": "gzip"}, body: good},
		{name: "body too large", opts: func(o *Options) { o.MaxBodyBytes = 10 }, body: good},
		{name: "decoded too large", opts: func(o *Options) { o.MaxDecodedBytes = 10 }, body: good},
	}
}

func v1Cases() []responseCase {
	return append(commonCases(v1(goodV1)), []responseCase{
		{name: "no content type", header: map[string]string{"Content-Type": ""}, body: v1(goodV1), wantGood: 2},
		{name: "explicit proto", header: map[string]string{"Content-Type": "application/x-protobuf;proto=prometheus.WriteRequest"}, body: v1(goodV1), wantGood: 2},
		{name: "no metric name", wantGood: 2, body: v1(ts([]string{"job", "a"}, prompb.Sample{Timestamp: 1, Value: 1}), goodV1)},
		{name: "empty label name", wantGood: 2, body: v1(goodV1, ts([]string{"__name__", "x", "", "a"}, prompb.Sample{Timestamp: 1, Value: 1}))},
		{name: "duplicate label name", wantGood: 2, body: v1(goodV1, ts([]string{"__name__", "x", "a", "1", "a", "2"}, prompb.Sample{Timestamp: 1, Value: 1}))},
		{name: "invalid utf8", wantGood: 2, body: v1(goodV1, ts([]string{"__name__", "x", "a", "\xff"}, prompb.Sample{Timestamp: 1, Value: 1}))},
		{name: "out of order", wantGood: 2, body: v1(goodV1, ts([]string{"__name__", "x"}, prompb.Sample{Timestamp: 5, Value: 1}, prompb.Sample{Timestamp: 4, Value: 1}))},
		{name: "same timestamp other value", wantGood: 2, body: v1(ts([]string{"__name__", "x"}, prompb.Sample{Timestamp: 5, Value: 1}, prompb.Sample{Timestamp: 5, Value: 2}), goodV1)},
		{name: "exact duplicate", wantGood: 2, body: v1(ts([]string{"__name__", "good", "job", "a"}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 2000, Value: 2}))},
		{name: "native histogram", wantGood: 2, body: func(t *testing.T) []byte {
			h := ts([]string{"__name__", "h"})
			h.Histograms = []prompb.Histogram{prompb.FromIntHistogram(1000, testHistogram()), prompb.FromIntHistogram(2000, testHistogram())}
			return v1(goodV1, h)(t)
		}},
		{name: "float native histogram", wantGood: 2, body: func(t *testing.T) []byte {
			h := ts([]string{"__name__", "h"})
			h.Histograms = []prompb.Histogram{prompb.FromFloatHistogram(1000, testHistogram().ToFloat(nil))}
			return v1(goodV1, h)(t)
		}},
		{name: "samples and histograms", wantGood: 2, body: func(t *testing.T) []byte {
			h := ts([]string{"__name__", "h"}, prompb.Sample{Timestamp: 1000, Value: 1})
			h.Histograms = []prompb.Histogram{prompb.FromIntHistogram(2000, testHistogram())}
			return v1(goodV1, h)(t)
		}},
		{name: "invalid native histogram", wantGood: 2, body: func(t *testing.T) []byte {
			bad := testHistogram()
			bad.Count = 1
			h := ts([]string{"__name__", "h"})
			h.Histograms = []prompb.Histogram{prompb.FromIntHistogram(1000, bad), prompb.FromIntHistogram(2000, testHistogram())}
			return v1(goodV1, h)(t)
		}},
		{name: "native histogram out of order", wantGood: 2, body: func(t *testing.T) []byte {
			h := ts([]string{"__name__", "h"})
			h.Histograms = []prompb.Histogram{prompb.FromIntHistogram(2000, testHistogram()), prompb.FromIntHistogram(1000, testHistogram())}
			return v1(goodV1, h)(t)
		}},
		{name: "with exemplar", wantGood: 2, body: func(t *testing.T) []byte {
			g := goodV1
			g.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: 2000}}
			return v1(g)(t)
		}},
		{name: "exemplar in a series of its own", wantGood: 2, body: func(t *testing.T) []byte {
			ex := ts([]string{"__name__", "good", "job", "a"})
			ex.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: 2000}}
			return v1(goodV1, ex)(t)
		}},
		{name: "exemplar of no series", wantGood: 2, body: func(t *testing.T) []byte {
			ex := ts([]string{"__name__", "never_sampled"})
			ex.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: 2000}}
			return v1(goodV1, ex)(t)
		}},
		{name: "exemplar labels too long", wantGood: 2, body: func(t *testing.T) []byte {
			g := goodV1
			g.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: strings.Repeat("x", 200)}}, Value: 0.5, Timestamp: 2000}}
			return v1(g)(t)
		}},
		{name: "too many labels", wantGood: 2, opts: func(o *Options) { o.Limits.MaxLabelsPerSeries = 2 },
			body: v1(goodV1, ts([]string{"__name__", "x", "a", "1", "b", "2"}, prompb.Sample{Timestamp: 1, Value: 1}))},
		{name: "label value too long", wantGood: 2, opts: func(o *Options) { o.Limits.MaxLabelValueLength = 5 },
			body: v1(goodV1, ts([]string{"__name__", "x", "a", "123456"}, prompb.Sample{Timestamp: 1, Value: 1}))},
		{name: "label name too long", wantGood: 2, opts: func(o *Options) { o.Limits.MaxLabelNameLength = len("__name__") },
			body: v1(goodV1, ts([]string{"__name__", "x", "abcdefghi", "1"}, prompb.Sample{Timestamp: 1, Value: 1}))},
	}...)
}

func v2Cases() []responseCase {
	cases := commonCases(v2(goodV2))
	for i := range cases {
		if cases[i].header == nil {
			cases[i].header = map[string]string{"Content-Type": v2ContentType}
		}
	}
	x := func(lbls ...string) v2Series {
		return v2Series{labels: lbls, samples: []writev2.Sample{{Timestamp: 1, Value: 1}}}
	}
	return append(cases, []responseCase{
		{name: "no metric name", wantGood: 2, body: v2(x("job", "a"), goodV2)},
		{name: "empty label name", wantGood: 2, body: v2(goodV2, x("", "a", "__name__", "x"))},
		{name: "duplicate label name", wantGood: 2, body: v2(goodV2, x("__name__", "x", "a", "1", "a", "2"))},
		{name: "unsorted labels", wantGood: 2, body: v2(goodV2, x("__name__", "x", "b", "1", "a", "2"))},
		{name: "invalid utf8", wantGood: 2, body: v2(goodV2, x("__name__", "x", "a", "\xff"))},
		{name: "symbol ref out of range", wantGood: 2, body: v2(goodV2, v2Series{rawRefs: []uint32{1, 99}, samples: []writev2.Sample{{Timestamp: 1, Value: 1}}})},
		{name: "odd label refs", wantGood: 2, body: v2(goodV2, v2Series{rawRefs: []uint32{1}, samples: []writev2.Sample{{Timestamp: 1, Value: 1}}})},
		{name: "first symbol not empty", body: func(t *testing.T) []byte {
			req := &writev2.Request{Symbols: []string{"__name__", "good"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{0, 1}, Samples: goodV2.samples}}}
			pb, _ := req.Marshal()
			return snappy.Encode(nil, pb)
		}},
		{name: "samples and histograms", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "x"},
			samples: []writev2.Sample{{Timestamp: 1, Value: 1}}, histograms: []writev2.Histogram{{Timestamp: 1, ZeroThreshold: 1e-128}}})},
		{name: "no samples", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "x"}})},
		{name: "exemplar in a series of its own", wantGood: 2, body: v2(goodV2, v2Series{labels: goodV2.labels, exemplars: [][]string{{"trace_id", "abc"}}})},
		{name: "exemplar of no series", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "never_sampled"}, exemplars: [][]string{{"trace_id", "abc"}}})},
		{name: "native histogram", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "h"}, histograms: []writev2.Histogram{
			writev2.FromIntHistogram(0, 1000, testHistogram()), writev2.FromIntHistogram(0, 2000, testHistogram())}})},
		{name: "float native histogram", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "h"}, histograms: []writev2.Histogram{
			writev2.FromFloatHistogram(0, 1000, testHistogram().ToFloat(nil))}})},
		{name: "custom buckets histogram", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "h"}, histograms: []writev2.Histogram{
			writev2.FromIntHistogram(0, 1000, &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 3, Sum: 2,
				PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}, CustomValues: []float64{0.5, 1}})}})},
		{name: "invalid native histogram", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "h"}, histograms: []writev2.Histogram{
			writev2.FromIntHistogram(0, 1000, func() *histogram.Histogram { h := testHistogram(); h.Count = 1; return h }()),
			writev2.FromIntHistogram(0, 2000, testHistogram())}})},
		{name: "out of order", wantGood: 2, body: v2(goodV2, v2Series{labels: []string{"__name__", "x"}, samples: []writev2.Sample{{Timestamp: 5, Value: 1}, {Timestamp: 4, Value: 1}}})},
		{name: "same timestamp other value", wantGood: 2, body: v2(v2Series{labels: []string{"__name__", "x"}, samples: []writev2.Sample{{Timestamp: 5, Value: 1}, {Timestamp: 5, Value: 2}}}, goodV2)},
		{name: "with metadata", wantGood: 2, body: v2(v2Series{labels: goodV2.labels, samples: goodV2.samples, help: "Requests served."})},
		{name: "with exemplar", wantGood: 2, body: v2(v2Series{labels: goodV2.labels, samples: goodV2.samples, exemplars: [][]string{{"trace_id", "abc"}}})},
		{name: "exemplar ref out of range", wantGood: 2, body: func(t *testing.T) []byte {
			req := &writev2.Request{Symbols: []string{"", "__name__", "good", "job", "a"}, Timeseries: []writev2.TimeSeries{{
				LabelsRefs: []uint32{1, 2, 3, 4}, Samples: goodV2.samples,
				Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{1, 42}, Value: 1, Timestamp: 1000}},
			}}}
			pb, _ := req.Marshal()
			return snappy.Encode(nil, pb)
		}},
		{name: "series limit", wantGood: 2, maxSeries: 1, body: v2(goodV2, x("__name__", "one_too_many"))},
	}...)
}

// TestResponses sends each case to a fresh store and compares status,
// written-headers and body with testdata/responses/<version>/<case>.golden,
// then checks what was stored. go test -run TestResponses -update rewrites
// the golden files.
func TestResponses(t *testing.T) {
	for _, version := range []string{"v1", "v2"} {
		cases := v1Cases()
		if version == "v2" {
			cases = v2Cases()
		}
		for _, c := range cases {
			t.Run(version+"/"+c.name, func(t *testing.T) {
				hd := newTestHeadLimited(t, c.maxSeries)
				opts := DefaultOptions()
				if c.opts != nil {
					c.opts(&opts)
				}
				header := map[string]string{}
				if version == "v2" {
					header["Content-Type"] = v2ContentType
				}
				for k, v := range c.header {
					header[k] = v
				}
				w := post(NewHandler(hd, opts), c.body(t), header)
				got := renderResponse(w.Code, w.Header(), w.Body.String())
				golden := filepath.Join("testdata", "responses", version, strings.ReplaceAll(c.name, " ", "_")+".golden")
				if *update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Fatalf("response differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
				}
				if n := stored(t, hd)[`{__name__="good", job="a"}`]; n != c.wantGood {
					t.Fatalf("good series has %d samples stored, want %d (stored: %v)", n, c.wantGood, stored(t, hd))
				}
			})
		}
	}
}

func renderResponse(code int, h http.Header, body string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %s\n", code, http.StatusText(code))
	var keys []string
	for k := range h {
		if strings.HasPrefix(k, "X-Prometheus-Remote-Write-") || k == "Content-Type" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, h.Get(k))
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String()
}

// testHistogram is a valid integer native histogram with positive and
// negative buckets.
func testHistogram() *histogram.Histogram {
	return &histogram.Histogram{
		Schema: 1, ZeroThreshold: 1e-128, ZeroCount: 1, Count: 9, Sum: 12.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 2, Length: 1}}, PositiveBuckets: []int64{1, 1, 1},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 1}}, NegativeBuckets: []int64{2},
	}
}
