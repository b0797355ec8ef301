package remotewrite

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http/httptest"
	"slices"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/storage"
)

// TestRealSender writes with the Prometheus client library's remote-write
// client, the sender Prometheus-compatible agents are built on, in both
// versions, and checks what it reports written and what was stored.
func TestRealSender(t *testing.T) {
	hd := newTestHead(t)
	srv := httptest.NewServer(NewHandler(hd, DefaultOptions()))
	defer srv.Close()
	client, err := remoteapi.NewAPI(srv.URL, remoteapi.WithAPIPath("/api/v1/write"))
	if err != nil {
		t.Fatal(err)
	}

	// A 1.0 client reads no written-headers; what it wrote is checked in
	// the store below.
	if _, err := client.Write(context.Background(), remoteapi.WriteV1MessageType, &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			ts([]string{"__name__", "up", "job", "v1"}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 2000, Value: 1}),
		},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "reqs", Help: "Requests.", Unit: "requests"}},
	}); err != nil {
		t.Fatalf("1.0 write: %v", err)
	}

	h1 := ts([]string{"__name__", "latency", "job", "v1"})
	h1.Histograms = []prompb.Histogram{prompb.FromIntHistogram(1000, testHistogram()), prompb.FromFloatHistogram(2000, testHistogram().ToFloat(nil))}
	if _, err := client.Write(context.Background(), remoteapi.WriteV1MessageType, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{h1}}); err != nil {
		t.Fatalf("1.0 histogram write: %v", err)
	}

	st := writev2.NewSymbolTable()
	refs := st.SymbolizeLabels(labels.FromStrings("__name__", "up", "job", "v2"), nil)
	hrefs := st.SymbolizeLabels(labels.FromStrings("__name__", "latency", "job", "v2"), nil)
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{{
		LabelsRefs: refs,
		Samples:    []writev2.Sample{{Timestamp: 1000, Value: 1, StartTimestamp: 100}, {Timestamp: 2000, Value: 0, StartTimestamp: 100}, {Timestamp: 3000, Value: 1, StartTimestamp: 2500}},
		Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("Target is up.")},
		Exemplars:  []writev2.Exemplar{{LabelsRefs: []uint32{st.Symbolize("trace_id"), st.Symbolize("4bf92f35")}, Value: 1, Timestamp: 3000}},
	}, {
		LabelsRefs: hrefs,
		Histograms: []writev2.Histogram{writev2.FromIntHistogram(500, 1000, testHistogram()), writev2.FromIntHistogram(500, 2000, testHistogram())},
		Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM},
	}}}
	req.Symbols = st.Symbols()
	stats, err := client.Write(context.Background(), remoteapi.WriteV2MessageType, req)
	if err != nil {
		t.Fatalf("2.0 write: %v", err)
	}
	// The client also fails a 2.0 write whose response lacks the
	// written-headers, so getting here means they were sent.
	if stats.Samples != 3 || stats.Histograms != 2 || stats.Exemplars != 1 {
		t.Fatalf("2.0 write: client read %+v, want 3 samples, 2 histograms and 1 exemplar written", stats)
	}
	eq, _ := hd.ExemplarQuerier(context.Background())
	ex, err := eq.Select(0, 10000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "v2")})
	if err != nil || len(ex) != 1 || len(ex[0].Exemplars) != 1 || ex[0].Exemplars[0].Labels.Get("trace_id") != "4bf92f35" {
		t.Fatalf("stored exemplars %+v, %v", ex, err)
	}

	wantMD := map[string]storage.Metadata{
		"reqs":    {Type: "counter", Help: "Requests.", Unit: "requests"},
		"up":      {Type: "gauge", Help: "Target is up."},
		"latency": {Type: "histogram"},
	}
	if md := hd.Metadata(""); !maps.Equal(md, wantMD) {
		t.Fatalf("metadata %v, want %v", md, wantMD)
	}

	// Start times come back per sample.
	q, _ := hd.Querier(0, 10000)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "v2"), labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	var sts []int64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != promchunkenc.ValNone {
			sts = append(sts, it.AtST())
		}
	}
	if !slices.Equal(sts, []int64{100, 100, 2500}) {
		t.Fatalf("start times %v, want [100 100 2500]", sts)
	}

	got := stored(t, hd)
	if got[`{__name__="up", job="v1"}`] != 2 || got[`{__name__="up", job="v2"}`] != 3 ||
		got[`{__name__="latency", job="v1"}`] != 2 || got[`{__name__="latency", job="v2"}`] != 2 {
		t.Fatalf("stored %v", got)
	}
}

// TestRealSenderExemplarOnlySeries sends exemplars the way Prometheus
// does, each in a series of its own that has labels and exemplars but no
// samples or histograms: next to a series with the samples, alone for a
// series the store has, and alone for one it does not have, which the
// exemplar creates, as in Prometheus.
func TestRealSenderExemplarOnlySeries(t *testing.T) {
	for _, version := range []remoteapi.WriteMessageType{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType} {
		t.Run(string(version), func(t *testing.T) {
			hd := newTestHead(t)
			srv := httptest.NewServer(NewHandler(hd, DefaultOptions()))
			defer srv.Close()
			client, err := remoteapi.NewAPI(srv.URL, remoteapi.WithAPIPath("/api/v1/write"))
			if err != nil {
				t.Fatal(err)
			}
			// send writes series and checks what a 2.0 response says was
			// written; a 1.0 response says nothing.
			send := func(what string, wantSamples, wantExemplars int, series ...exemplarTestSeries) {
				t.Helper()
				stats, err := client.Write(context.Background(), version, exemplarTestRequest(version, series))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if version == remoteapi.WriteV2MessageType && (stats.Samples != wantSamples || stats.Histograms != 0 || stats.Exemplars != wantExemplars) {
					t.Fatalf("%s: client read %+v written, want %d samples and %d exemplars", what, stats, wantSamples, wantExemplars)
				}
			}
			reqs := []string{"__name__", "reqs_total", "job", "api"}
			send("exemplar next to its samples", 1, 1,
				exemplarTestSeries{labels: reqs, sample: &prompb.Sample{Timestamp: 1000, Value: 1}},
				exemplarTestSeries{labels: reqs, exemplar: &prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: "a1"}}, Value: 1, Timestamp: 1000}})
			send("exemplar alone, series exists", 0, 1,
				exemplarTestSeries{labels: reqs, exemplar: &prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: "b2"}}, Value: 1, Timestamp: 2000}})
			send("exemplar alone, no such series", 0, 1,
				exemplarTestSeries{labels: []string{"__name__", "never_sampled", "job", "api"}, exemplar: &prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: "c3"}}, Value: 1, Timestamp: 3000}})

			if got := storedExemplars(t, hd); !slices.Equal(got, []string{`{__name__="never_sampled", job="api"} c3@3000`, `{__name__="reqs_total", job="api"} a1@1000 b2@2000`}) {
				t.Fatalf("stored exemplars %q, want c3 on never_sampled, a1 and b2 on reqs_total", got)
			}
			if got := stored(t, hd); len(got) != 1 || got[`{__name__="reqs_total", job="api"}`] != 1 {
				t.Fatalf("stored %v, want only reqs_total's sample", got)
			}
		})
	}
}

// exemplarTestSeries is a series of a request with one sample or one
// exemplar.
type exemplarTestSeries struct {
	labels   []string
	sample   *prompb.Sample
	exemplar *prompb.Exemplar
}

// exemplarTestRequest builds a request of the given version.
func exemplarTestRequest(version remoteapi.WriteMessageType, series []exemplarTestSeries) any {
	if version == remoteapi.WriteV1MessageType {
		req := &prompb.WriteRequest{}
		for _, s := range series {
			pts := ts(s.labels)
			if s.sample != nil {
				pts.Samples = []prompb.Sample{*s.sample}
			}
			if s.exemplar != nil {
				pts.Exemplars = []prompb.Exemplar{*s.exemplar}
			}
			req.Timeseries = append(req.Timeseries, pts)
		}
		return req
	}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		wts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(labels.FromStrings(s.labels...), nil)}
		if s.sample != nil {
			wts.Samples = []writev2.Sample{{Timestamp: s.sample.Timestamp, Value: s.sample.Value}}
		}
		if e := s.exemplar; e != nil {
			var refs []uint32
			for _, l := range e.Labels {
				refs = append(refs, st.Symbolize(l.Name), st.Symbolize(l.Value))
			}
			wts.Exemplars = []writev2.Exemplar{{LabelsRefs: refs, Value: e.Value, Timestamp: e.Timestamp}}
		}
		req.Timeseries = append(req.Timeseries, wts)
	}
	req.Symbols = st.Symbols()
	return req
}

// storedExemplars renders the head's exemplars as "series trace@ts ...",
// one string per series, sorted.
func storedExemplars(t *testing.T, hd *head.Head) []string {
	t.Helper()
	eq, err := hd.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		s := r.SeriesLabels.String()
		for _, e := range r.Exemplars {
			s += fmt.Sprintf(" %s@%d", e.Labels.Get("trace_id"), e.Ts)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
