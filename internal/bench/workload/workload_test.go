package workload

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

func testOptions() Options {
	o := DefaultOptions()
	o.Series = 1000
	o.SeriesPerRequest = 64
	o.Senders = 3
	o.SamplesPerSeries = 2
	o.Start = 1_700_000_000_000
	return o
}

func mustSchedule(t *testing.T, o Options) *Schedule {
	t.Helper()
	s, err := NewSchedule(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEncodeDeterministic(t *testing.T) {
	for _, p := range []Protocol{V1, V2} {
		t.Run("protocol="+string(p), func(t *testing.T) {
			o := testOptions()
			o.Churn, o.ChurnEvery = 0.1, 5
			// Two encoders of two schedules, one going forwards and one
			// backwards, must produce the same bytes: a request depends
			// on nothing but the options and its coordinates.
			a := NewEncoder(mustSchedule(t, o), p)
			b := NewEncoder(mustSchedule(t, o), p)
			type key struct {
				c int
				q int64
			}
			fwd := map[key][]byte{}
			for c := range o.Senders {
				for q := range int64(40) {
					body, _, err := a.Append(nil, c, q)
					if err != nil {
						t.Fatal(err)
					}
					fwd[key{c, q}] = body
				}
			}
			for c := o.Senders - 1; c >= 0; c-- {
				for q := int64(39); q >= 0; q-- {
					body, _, err := b.Append([]byte("prefix"), c, q)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(body, []byte("prefix")) {
						t.Fatal("Append did not append to dst")
					}
					if !bytes.Equal(body[len("prefix"):], fwd[key{c, q}]) {
						t.Fatalf("request %d of sender %d differs between runs", q, c)
					}
				}
			}

			o.Seed++
			other := NewEncoder(mustSchedule(t, o), p)
			body, _, err := other.Append(nil, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(body, fwd[key{0, 0}]) {
				t.Fatal("a different seed gave the same bytes")
			}
		})
	}
}

// TestScheduleOrder checks the property servers depend on: for every
// concurrency, each series' timestamps strictly increase along its
// sender's requests, and no series is sent by two senders.
func TestScheduleOrder(t *testing.T) {
	for _, senders := range []int{1, 2, 3, 7, 16} {
		for _, churn := range []float64{0, 0.05, 1} {
			t.Run(fmt.Sprintf("senders=%d/churn=%g", senders, churn), func(t *testing.T) {
				o := testOptions()
				o.Senders = senders
				o.Series = 997 // not a multiple of anything
				o.Churn, o.ChurnEvery = churn, 3
				s := mustSchedule(t, o)
				owner := map[uint64]int{}
				last := map[uint64]int64{}
				var ids []uint64
				for c := range senders {
					for q := range int64(4*s.BatchesPerRound(c) + 5) {
						ids = s.AppendSeries(ids[:0], c, q)
						if len(ids) == 0 {
							t.Fatalf("request %d of sender %d carries no series", q, c)
						}
						r := s.Round(c, q)
						for _, id := range ids {
							if o, ok := owner[id]; ok && o != c {
								t.Fatalf("series %d sent by senders %d and %d", id, o, c)
							}
							owner[id] = c
							for j := range o.SamplesPerSeries {
								ts := s.Timestamp(r, j)
								if prev, ok := last[id]; ok && ts <= prev {
									t.Fatalf("series %d: timestamp %d after %d (sender %d, request %d)", id, ts, prev, c, q)
								}
								last[id] = ts
							}
						}
					}
				}
				if churn == 0 && len(owner) != o.Series {
					t.Fatalf("sent %d series, want %d", len(owner), o.Series)
				}
			})
		}
	}
}

func TestChurn(t *testing.T) {
	o := testOptions()
	o.Senders = 1
	o.Series = 100
	o.SeriesPerRequest = 100
	o.Churn, o.ChurnEvery = 0.1, 2
	s := mustSchedule(t, o)
	seen := map[uint64]bool{}
	var prev []uint64
	for q := range int64(30) {
		ids := s.AppendSeries(nil, 0, q)
		if len(ids) != 100 {
			t.Fatalf("request %d: %d series, want 100", q, len(ids))
		}
		if prev != nil {
			changed := 0
			for i := range ids {
				if ids[i] != prev[i] {
					changed++
					if seen[ids[i]] {
						t.Fatalf("request %d: series id %d reused", q, ids[i])
					}
				}
			}
			want := 0
			if q%2 == 0 {
				want = 10 // 10% of 100, at every second request
			}
			if changed != want {
				t.Fatalf("request %d: %d series replaced, want %d", q, changed, want)
			}
		}
		for _, id := range ids {
			seen[id] = true
		}
		prev = ids
	}
	// 14 churn events of 10 series after 100 initial ones.
	if len(seen) != 100+14*10 {
		t.Fatalf("%d distinct series, want 240", len(seen))
	}

	o.Churn = 0
	s = mustSchedule(t, o)
	first := s.AppendSeries(nil, 0, 0)
	if got := s.AppendSeries(nil, 0, 25); !slices.Equal(first, got) {
		t.Fatal("series changed without churn")
	}
}

func TestGeneration(t *testing.T) {
	// A range of 5 slots, 2 replaced per event: after 3 events positions
	// 0..5 of 0,1,2,3,4,0,1,... were replaced, so slot 0 twice.
	want := []int64{2, 1, 1, 1, 1}
	for p, w := range want {
		if got := generation(int64(p), 3, 2, 5); got != w {
			t.Errorf("generation(%d) = %d, want %d", p, got, w)
		}
	}
}

func TestLabels(t *testing.T) {
	for _, k := range []int{MinLabels, 4, 10, 20} {
		t.Run(fmt.Sprintf("labels=%d", k), func(t *testing.T) {
			seen := map[string]uint64{}
			var ls []Label
			for id := range uint64(5 * len(catalog)) {
				ls = AppendLabels(ls[:0], 1, id, k)
				if len(ls) != k+1 {
					t.Fatalf("series %d has %d labels, want %d: %v", id, len(ls), k+1, ls)
				}
				if ls[0].Name != "__name__" {
					t.Fatalf("series %d: first label %q", id, ls[0].Name)
				}
				if !slices.IsSortedFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) }) {
					t.Fatalf("series %d: labels not sorted: %v", id, ls)
				}
				for i := 1; i < len(ls); i++ {
					if ls[i].Name == ls[i-1].Name {
						t.Fatalf("series %d: duplicate label %q", id, ls[i].Name)
					}
				}
				key := fmt.Sprint(ls)
				if other, ok := seen[key]; ok {
					t.Fatalf("series %d and %d have the same labels %v", id, other, ls)
				}
				seen[key] = id
			}
		})
	}
}

func TestValues(t *testing.T) {
	const seed = 7
	for id := range uint64(len(catalog)) {
		tmpl := catalog[id]
		prev := Value(seed, id, 0)
		for k := int64(1); k < 200; k++ {
			v := Value(seed, id, k)
			if tmpl.typ == Counter || tmpl.kind == kindBucket || tmpl.kind == kindHistCount || tmpl.kind == kindHistSum {
				if v < prev {
					t.Fatalf("%s (series %d) decreased at k=%d: %v -> %v", tmpl.name, id, k, prev, v)
				}
			}
			prev = v
		}
	}
	// Buckets of one instance are cumulative.
	inst := uint64(3)
	for k := range int64(50) {
		var prev float64
		for id := range uint64(len(catalog)) {
			if catalog[id].kind != kindBucket {
				continue
			}
			v := Value(seed, inst*uint64(len(catalog))+id, k)
			if v < prev {
				t.Fatalf("bucket %s below the previous one at k=%d", catalog[id].dims[0].Value, k)
			}
			prev = v
		}
	}
}

func TestDecodeV1(t *testing.T) {
	for _, values := range []Values{ValuesNode, ValuesNoisy} {
		t.Run(string(values), func(t *testing.T) { testDecodeV1(t, values) })
	}
}

func testDecodeV1(t *testing.T, values Values) {
	o := testOptions()
	o.Values = values
	s := mustSchedule(t, o)
	body, info, err := NewEncoder(s, V1).Append(nil, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	ids := s.AppendSeries(nil, 1, 7)
	if len(req.Timeseries) != len(ids) || info.Samples != len(ids)*o.SamplesPerSeries {
		t.Fatalf("%d series, info %+v; want %d series", len(req.Timeseries), info, len(ids))
	}
	for i, ts := range req.Timeseries {
		want := AppendLabels(nil, o.Seed, ids[i], o.Labels)
		if len(ts.Labels) != len(want) {
			t.Fatalf("series %d: %d labels, want %d", i, len(ts.Labels), len(want))
		}
		for j, l := range ts.Labels {
			if l.Name != want[j].Name || l.Value != want[j].Value {
				t.Fatalf("series %d label %d = %v, want %v", i, j, l, want[j])
			}
		}
		for j, smp := range ts.Samples {
			want := Value(o.Seed, ids[i], s.SampleIndex(info.Round, j))
			if values == ValuesNoisy {
				want = NoisyValue(o.Seed, ids[i], s.SampleIndex(info.Round, j))
			}
			if smp.Timestamp != s.Timestamp(info.Round, j) || smp.Value != want {
				t.Fatalf("series %d sample %d = %+v", i, j, smp)
			}
		}
	}
}

func TestDecodeV2(t *testing.T) {
	o := testOptions()
	s := mustSchedule(t, o)
	body, info, err := NewEncoder(s, V2).Append(nil, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var req writev2.Request
	if err := req.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if len(req.Symbols) == 0 || req.Symbols[0] != "" {
		t.Fatal("symbol table must start with the empty string")
	}
	ids := s.AppendSeries(nil, 2, 3)
	if len(req.Timeseries) != len(ids) {
		t.Fatalf("%d series, want %d", len(req.Timeseries), len(ids))
	}
	for i, ts := range req.Timeseries {
		want := AppendLabels(nil, o.Seed, ids[i], o.Labels)
		for j := range want {
			name, value := req.Symbols[ts.LabelsRefs[2*j]], req.Symbols[ts.LabelsRefs[2*j+1]]
			if name != want[j].Name || value != want[j].Value {
				t.Fatalf("series %d label %d = %s=%s, want %v", i, j, name, value, want[j])
			}
		}
		typ, help := MetricTypeOf(ids[i])
		if ts.Metadata.Type != v2Type(typ) || req.Symbols[ts.Metadata.HelpRef] != help {
			t.Fatalf("series %d metadata %+v", i, ts.Metadata)
		}
		if len(ts.Samples) != o.SamplesPerSeries || ts.Samples[0].Timestamp != s.Timestamp(info.Round, 0) {
			t.Fatalf("series %d samples %+v", i, ts.Samples)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]func(*Options){
		"no series":             func(o *Options) { o.Series = 0 },
		"too few labels":        func(o *Options) { o.Labels = MinLabels - 1 },
		"too many labels":       func(o *Options) { o.Labels = MaxLabels + 1 },
		"no samples":            func(o *Options) { o.SamplesPerSeries = 0 },
		"no series per request": func(o *Options) { o.SeriesPerRequest = 0 },
		"no senders":            func(o *Options) { o.Senders = 0 },
		"senders over series":   func(o *Options) { o.Series = 2; o.Senders = 3 },
		"churn over 1":          func(o *Options) { o.Churn = 1.5 },
		"negative churn every":  func(o *Options) { o.ChurnEvery = -1 },
		"no interval":           func(o *Options) { o.Interval = 0 },
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			f(&o)
			if err := o.Validate(); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestNoisyValues checks that noisy values are deterministic, in their
// series' band, and use a float's full precision, and that Validate
// knows the value kinds.
func TestNoisyValues(t *testing.T) {
	fractional := 0
	for id := uint64(0); id < 100; id++ {
		for k := int64(0); k < 100; k++ {
			v := NoisyValue(1, id, k)
			if v != NoisyValue(1, id, k) {
				t.Fatalf("series %d sample %d: not deterministic", id, k)
			}
			if v < 0 || v >= 100 {
				t.Fatalf("series %d sample %d: %g out of [0, 100)", id, k, v)
			}
			if v*1e6 != math.Trunc(v*1e6) {
				fractional++
			}
		}
	}
	if fractional < 9900 {
		t.Errorf("%d of 10000 values have more than six decimals, want nearly all", fractional)
	}
	o := DefaultOptions()
	for _, v := range []Values{"", ValuesNode, ValuesNoisy} {
		o.Values = v
		if err := o.Validate(); err != nil {
			t.Errorf("values %q: %v", v, err)
		}
	}
	o.Values = "random"
	if err := o.Validate(); err == nil {
		t.Error("values \"random\" validated")
	}
}

// TestDecodeOTLP decodes an OTLP request and finds every series of the
// request, with its labels (job and instance from the resource) and
// samples, as remote-write would send them.
func TestDecodeOTLP(t *testing.T) {
	o := testOptions()
	s := mustSchedule(t, o)
	body, info, err := NewEncoder(s, OTLP).Append(nil, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		t.Fatal(err)
	}
	// Each point back as remote-write's labels and sample.
	got := map[string][]prompb.Sample{}
	rms := req.Metrics().ResourceMetrics()
	for i := range rms.Len() {
		res := rms.At(i).Resource().Attributes()
		job, _ := res.Get("service.name")
		inst, _ := res.Get("service.instance.id")
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			var dps pmetric.NumberDataPointSlice
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				dps = m.Gauge().DataPoints()
			case pmetric.MetricTypeSum:
				if !m.Sum().IsMonotonic() || m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
					t.Fatalf("%s: a sum that is not a cumulative counter", m.Name())
				}
				dps = m.Sum().DataPoints()
			default:
				t.Fatalf("%s: a %s", m.Name(), m.Type())
			}
			for k := range dps.Len() {
				p := dps.At(k)
				lbls := map[string]string{"__name__": m.Name(), "job": job.Str(), "instance": inst.Str()}
				p.Attributes().Range(func(k string, v pcommon.Value) bool { lbls[k] = v.Str(); return true })
				key := fmt.Sprint(labels.FromMap(lbls))
				got[key] = append(got[key], prompb.Sample{Timestamp: int64(p.Timestamp()) / 1e6, Value: p.DoubleValue()})
			}
		}
	}
	ids := s.AppendSeries(nil, 1, 7)
	if len(got) != len(ids) || info.Samples != len(ids)*o.SamplesPerSeries {
		t.Fatalf("%d series, info %+v; want %d series", len(got), info, len(ids))
	}
	for _, id := range ids {
		m := map[string]string{}
		for _, l := range AppendLabels(nil, o.Seed, id, o.Labels) {
			m[l.Name] = l.Value
		}
		key := fmt.Sprint(labels.FromMap(m))
		samples := got[key]
		if len(samples) != o.SamplesPerSeries {
			t.Fatalf("series %s: %d samples, want %d", key, len(samples), o.SamplesPerSeries)
		}
		for j, smp := range samples {
			if smp.Timestamp != s.Timestamp(info.Round, j) || smp.Value != Value(o.Seed, id, s.SampleIndex(info.Round, j)) {
				t.Fatalf("series %s sample %d = %+v", key, j, smp)
			}
		}
	}
}

// TestExposition parses two scrapes of a target as Prometheus' text
// parser does: every family once with its type, the catalog's series for
// each shard, and counters that move from one scrape to the next.
func TestExposition(t *testing.T) {
	const shards = 3
	parse := func(k int64) map[string]*dto.MetricFamily {
		t.Helper()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(AppendExposition(nil, 1, 7, shards, k)))
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
	a, b := parse(10), parse(11)
	series := 0
	for _, f := range a {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			series += len(f.Metric) * (len(f.Metric[0].Histogram.Bucket) + 2)
		default:
			series += len(f.Metric)
		}
	}
	if series != shards*SeriesPerInstance() {
		t.Fatalf("%d series, want %d", series, shards*SeriesPerInstance())
	}
	if f := a["http_request_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) != shards {
		t.Fatalf("histogram family: %v", f)
	}
	cpu := func(fams map[string]*dto.MetricFamily) float64 {
		return fams["node_cpu_seconds_total"].Metric[0].Counter.GetValue()
	}
	if f := a["node_cpu_seconds_total"]; f.GetType() != dto.MetricType_COUNTER || cpu(b) <= cpu(a) {
		t.Fatalf("node_cpu_seconds_total %v then %v", cpu(a), cpu(b))
	}
}
