package otlp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/strata-db/strata/internal/storage"
)

// recorder is a store that records what is committed to it, as lines.
type recorder struct {
	mu    sync.Mutex
	lines []string
	refs  map[string]storage.SeriesRef
}

func (r *recorder) Appender(context.Context) storage.Appender { return &recordApp{r: r} }

// reset forgets the lines committed so far.
func (r *recorder) reset() {
	r.mu.Lock()
	r.lines = r.lines[:0]
	r.mu.Unlock()
}

// sorted returns the lines committed since the last reset, sorted.
func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.lines)
	sort.Strings(out)
	return out
}

type recordApp struct {
	r       *recorder
	pending []string
}

func (a *recordApp) Append(_ storage.SeriesRef, lset labels.Labels, s storage.Sample) (storage.SeriesRef, error) {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if a.r.refs == nil {
		a.r.refs = map[string]storage.SeriesRef{}
	}
	k := lset.String()
	ref, ok := a.r.refs[k]
	if !ok {
		ref = storage.SeriesRef(len(a.r.refs) + 1)
		a.r.refs[k] = ref
	}
	a.pending = append(a.pending, fmt.Sprintf("%s t=%d st=%d v=%x", k, s.T, s.ST, math.Float64bits(s.V)))
	return ref, nil
}

func (a *recordApp) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}

func (a *recordApp) SetMetadata(name string, m storage.Metadata) error {
	a.pending = append(a.pending, fmt.Sprintf("# %s %s %q %q", name, m.Type, m.Unit, m.Help))
	return nil
}

func (a *recordApp) Commit() error {
	a.r.mu.Lock()
	a.r.lines = append(a.r.lines, a.pending...)
	a.r.mu.Unlock()
	a.pending = nil
	return nil
}

func (a *recordApp) Rollback() error { a.pending = nil; return nil }

// paths sends bodies through the fast path and through the reference
// alone, each into a recorder, and fails if they store or answer
// differently.
type paths struct {
	fast, ref       *Handler
	fastRec, refRec *recorder
}

func newPaths(t testing.TB, opts Options) *paths {
	p := &paths{fastRec: &recorder{}, refRec: &recorder{}}
	p.fast = newHandler(t, p.fastRec, opts)
	opts.referenceOnly = true
	p.ref = newHandler(t, p.refRec, opts)
	return p
}

func (p *paths) send(t testing.TB, body []byte) {
	t.Helper()
	p.fastRec.reset()
	p.refRec.reset()
	a := post(p.fast, "/v1/metrics", contentProtobuf, "", body)
	b := post(p.ref, "/v1/metrics", contentProtobuf, "", body)
	if a.Code != b.Code {
		t.Fatalf("status %d on the fast path, %d on the reference (%s)", a.Code, b.Code, b.Body)
	}
	if a.Code == 200 {
		ra, rb := response(t, a).PartialSuccess(), response(t, b).PartialSuccess()
		if ra.RejectedDataPoints() != rb.RejectedDataPoints() {
			t.Fatalf("%d points rejected on the fast path (%s), %d on the reference (%s)",
				ra.RejectedDataPoints(), ra.ErrorMessage(), rb.RejectedDataPoints(), rb.ErrorMessage())
		}
	}
	if got, want := p.fastRec.sorted(), p.refRec.sorted(); !slices.Equal(got, want) {
		t.Fatalf("the fast path stored\n%s\nthe reference\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// numberRequest returns a request of gauges and cumulative sums of every
// shape the fast path takes, at step n.
func numberRequest(n int) pmetric.Metrics {
	at := func(d time.Duration) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t0.Add(time.Duration(n)*15*time.Second + d))
	}
	md := pmetric.NewMetrics()
	for r, res := range []map[string]string{
		{"service.name": "checkout", "service.namespace": "shop", "service.instance.id": "pod-1", "host.name": "node-1", "k8s.pod.name": "p"},
		{"service.name": "cart"},           // job only: no target_info
		{"host.name": "h", "region": "eu"}, // no job: no target_info
		{},
		{"service.name": "checkout", "service.namespace": "shop", "service.instance.id": "pod-1", "host.name": "node-1", "k8s.pod.name": "p"}, // again
	} {
		rm := md.ResourceMetrics().AppendEmpty()
		for k, v := range res {
			rm.Resource().Attributes().PutStr(k, v)
		}
		for s := range 2 {
			sm := rm.ScopeMetrics().AppendEmpty()
			if s == 1 {
				sm.Scope().SetName("lib")
				sm.Scope().SetVersion("1.2")
				sm.Scope().Attributes().PutStr("scope.attr", "x")
				sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			}
			g := sm.Metrics().AppendEmpty()
			g.SetName("room.temperature")
			g.SetUnit("Cel")
			g.SetDescription("temperature")
			gp := g.SetEmptyGauge().DataPoints()
			p := gp.AppendEmpty()
			p.SetTimestamp(at(0))
			p.SetDoubleValue(20.5 + float64(n))
			p.Attributes().PutStr("room", "a")
			p.Attributes().PutStr("room.name", "kitchen")
			p.Attributes().PutStr("room_name", "collides") // sanitised to the same name
			p = gp.AppendEmpty()
			p.SetTimestamp(at(time.Second))
			p.SetIntValue(int64(n))
			p.Attributes().PutInt("floor", 2)
			p.Attributes().PutBool("open", true)
			p = gp.AppendEmpty() // no value at all
			p.SetTimestamp(at(2 * time.Second))
			p = gp.AppendEmpty()
			p.SetTimestamp(at(3 * time.Second))
			p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			p.Attributes().PutStr("stale", "yes")

			c := sm.Metrics().AppendEmpty()
			c.SetName("http.requests")
			c.SetUnit("{request}")
			sum := c.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for i := range 3 {
				p := sum.DataPoints().AppendEmpty()
				p.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
				p.SetTimestamp(at(time.Duration(i) * time.Millisecond))
				p.SetIntValue(int64(n * i))
				p.Attributes().PutStr("route", fmt.Sprintf("/r%d", i))
				p.Attributes().PutStr("__name__", "ignored")
			}
			u := sm.Metrics().AppendEmpty()
			u.SetName("queue.size")
			u.SetUnit("By")
			us := u.SetEmptySum()
			us.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			up := us.DataPoints().AppendEmpty()
			up.SetTimestamp(at(0))
			up.SetDoubleValue(float64(r))
		}
	}
	return md
}

// mixedRequest is numberRequest with, in its first scope, what the fast
// path hands the converter metric by metric (histograms of both kinds, a
// summary, a sum without temporality) and, if delta, a delta sum.
func mixedRequest(n int, delta bool) pmetric.Metrics {
	md := numberRequest(n)
	at := pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * 15 * time.Second))
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	h := ms.AppendEmpty()
	h.SetName("latency")
	h.SetUnit("s")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hist.DataPoints().AppendEmpty()
	hp.SetTimestamp(at)
	hp.SetCount(uint64(3 + n))
	hp.SetSum(1.5)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{1, 1, uint64(1 + n)})
	hp.Attributes().PutStr("route", "/")
	e := ms.AppendEmpty()
	e.SetName("size")
	eh := e.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetTimestamp(at)
	ep.SetCount(uint64(2 + n))
	ep.SetSum(10)
	ep.SetScale(1)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, uint64(1 + n)})
	sm := ms.AppendEmpty()
	sm.SetName("rpc.duration")
	sp := sm.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetTimestamp(at)
	sp.SetCount(4)
	sp.SetSum(2)
	q := sp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(0.4)
	u := ms.AppendEmpty()
	u.SetName("unspecified")
	up := u.SetEmptySum().DataPoints().AppendEmpty()
	up.SetTimestamp(at)
	up.SetIntValue(1)
	if delta {
		d := ms.AppendEmpty()
		d.SetName("jobs.done")
		ds := d.SetEmptySum()
		ds.SetIsMonotonic(true)
		ds.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		dp := ds.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(at - 15e9)
		dp.SetTimestamp(at)
		dp.SetIntValue(5)
	}
	return md
}

// TestFastPathMatchesReference sends requests of gauges and cumulative
// sums (new streams, then known ones) and requests the fast path leaves
// to the reference, under several translation settings, and checks that
// what is stored and answered is the reference's.
func TestFastPathMatchesReference(t *testing.T) {
	for name, tweak := range map[string]func(*Options){
		"default":   func(*Options) {},
		"promote":   func(o *Options) { o.Translation.PromoteResourceAttributes = []string{"host.name", "region"} },
		"all":       func(o *Options) { o.Translation.PromoteAllResourceAttributes = true },
		"scope":     func(o *Options) { o.Translation.PromoteScopeMetadata = true },
		"keep":      func(o *Options) { o.Translation.KeepIdentifyingResourceAttributes = true },
		"noescape":  func(o *Options) { o.Translation.TranslationStrategy = otlptranslator.NoTranslation },
		"nosuffix":  func(o *Options) { o.Translation.TranslationStrategy = otlptranslator.UnderscoreEscapingWithoutSuffixes },
		"lookback0": func(o *Options) { o.LookbackDelta = 0 },
		"nhcb":      func(o *Options) { o.Translation.ConvertHistogramsToNHCB = true },
		"as-is":     func(o *Options) { o.Delta = DeltaAsIs },
		"reject":    func(o *Options) { o.Delta = DeltaReject },
	} {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			tweak(&opts)
			p := newPaths(t, opts)
			for n := range 4 {
				p.send(t, encodeProto(t, numberRequest(n)))
			}
			p.send(t, encodeProto(t, testMetrics())) // exemplars and deltas: the reference's
			p.send(t, encodeProto(t, numberRequest(4)))
			for n := 5; n < 8; n++ {
				p.send(t, encodeProto(t, mixedRequest(n, true)))
			}
			learnt := 0
			for i := range p.fast.cache.families.shards {
				learnt += len(p.fast.cache.families.shards[i].m)
			}
			if learnt == 0 {
				t.Error("the fast path learnt nothing")
			}
		})
	}
}

// TestFastPathTargetInfoSpan sends points hours apart: target_info's
// samples every half lookback, and their bound, as the reference.
func TestFastPathTargetInfoSpan(t *testing.T) {
	p := newPaths(t, DefaultOptions())
	md := numberRequest(0)
	pts := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
	pts.At(0).SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(-100 * time.Hour)))
	p.send(t, encodeProto(t, md))
}

// FuzzFastPath sends arbitrary protobuf bodies through both paths: what
// the fast path takes, it stores and answers as the reference does.
//
//	go test ./internal/ingest/otlp -run NONE -fuzz FuzzFastPath -fuzztime 1m
func FuzzFastPath(f *testing.F) {
	f.Add(encodeProto(f, numberRequest(0)))
	f.Add(encodeProto(f, numberRequest(1)))
	f.Add(encodeProto(f, testMetrics()))
	f.Add(encodeProto(f, mixedRequest(0, false)))
	f.Add(encodeProto(f, mixedRequest(1, true)))
	f.Add(encodeProto(f, sumRequest(false, sumPoint{"a", 0, 10, 2, 0, false}, sumPoint{"a", 10, 20, 0, 1.5, false})))
	f.Add(encodeProto(f, deltaRequest(0, 10, 2)))
	// Deltas made cumulative, and kept as they are.
	cumulative := newPaths(f, DefaultOptions())
	opts := DefaultOptions()
	opts.Delta = DeltaAsIs
	asIs := newPaths(f, opts)
	f.Fuzz(func(t *testing.T, body []byte) {
		cumulative.send(t, body)
		asIs.send(t, body)
	})
}

// TestPointAttributesKey checks that a point's attributes make the same
// key whether other fields come between them or not, and another key
// when they differ.
func TestPointAttributesKey(t *testing.T) {
	attr := func(k, v string) []byte {
		kv := appendBytesField(nil, 1, []byte(k))
		kv = appendBytesField(kv, 2, appendBytesField(nil, 1, []byte(v)))
		return appendBytesField(nil, 7, kv)
	}
	ts := binary.LittleEndian.AppendUint64([]byte{3<<3 | wireFixed64}, 42)
	a, b := attr("a", "1"), attr("b", "2")
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	var f fastState
	key := func(msg []byte) uint64 {
		p, err := f.parsePoint(msg)
		if err != nil {
			t.Fatal(err)
		}
		return p.attrs
	}
	together, apart := key(cat(ts, a, b)), key(cat(a, ts, b))
	if together != apart {
		t.Errorf("attributes with a field between them make another key")
	}
	if key(cat(a, attr("b", "3"))) == together || key(cat(a)) == together {
		t.Errorf("other attributes make the same key")
	}
}

// TestFastPathPredictions sends the same metrics and streams in orders
// that change from request to request, with streams coming and going:
// the fast path, which looks first where the last request had them,
// still stores every point in its own series, as the reference does.
func TestFastPathPredictions(t *testing.T) {
	p := newPaths(t, DefaultOptions())
	for n := range 8 {
		md := numberRequest(n)
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				reorder(sm.Metrics(), n)
				for _, m := range sm.Metrics().All() {
					switch m.Type() {
					case pmetric.MetricTypeGauge:
						reorderPoints(m.Gauge().DataPoints(), n)
					case pmetric.MetricTypeSum:
						reorderPoints(m.Sum().DataPoints(), n)
					}
				}
			}
		}
		p.send(t, encodeProto(t, md))
	}
}

// reorder rotates the metrics by n and, on odd n, drops the first.
func reorder(ms pmetric.MetricSlice, n int) {
	out := pmetric.NewMetricSlice()
	for i := range ms.Len() {
		if i > 0 || n%2 == 0 {
			ms.At((i + n) % ms.Len()).CopyTo(out.AppendEmpty())
		}
	}
	out.CopyTo(ms)
}

// reorderPoints reverses the points on odd n and, every third n, adds a
// stream in the middle.
func reorderPoints(ps pmetric.NumberDataPointSlice, n int) {
	if n%2 == 1 {
		for i, j := 0, ps.Len()-1; i < j; i, j = i+1, j-1 {
			a, b := pmetric.NewNumberDataPoint(), pmetric.NewNumberDataPoint()
			ps.At(i).CopyTo(a)
			ps.At(j).CopyTo(b)
			b.CopyTo(ps.At(i))
			a.CopyTo(ps.At(j))
		}
	}
	if n%3 == 0 && ps.Len() > 1 {
		extra := pmetric.NewNumberDataPointSlice()
		for i := range ps.Len() {
			ps.At(i).CopyTo(extra.AppendEmpty())
			if i == 0 {
				p := extra.AppendEmpty()
				ps.At(0).CopyTo(p)
				p.Attributes().PutStr("new", fmt.Sprint(n))
			}
		}
		extra.CopyTo(ps)
	}
}

// TestFastPathForgets checks that a stream and a metric the cache forgets
// are not predicted any more, and let go of what came after them, so that
// what the cache forgot is not kept alive by what it keeps.
func TestFastPathForgets(t *testing.T) {
	p := newPaths(t, DefaultOptions())
	p.send(t, encodeProto(t, numberRequest(0)))
	c := p.fast.cache
	var old *stream
	for i := range c.streams.shards {
		for _, s := range c.streams.shards[i].m {
			if s.next.Load() != nil {
				old = s
			}
		}
	}
	if old == nil {
		t.Fatal("no stream has a successor")
	}
	c.swept.Store(0)
	c.sweep(time.Now().Unix() + int64(streamTTL/time.Second) + 1)
	if !old.gone.Load() || old.next.Load() != nil {
		t.Errorf("forgotten stream: gone %v, successor %p", old.gone.Load(), old.next.Load())
	}
	var fam family
	fam.first.Store(old)
	if s := nextStream(&fam, nil, old.key); s != nil {
		t.Error("a forgotten stream was predicted")
	}
	// numberRequest's resources are made from maps, so their bytes, and
	// the streams' keys, change from request to request: the stream is
	// found by its labels.
	p.send(t, encodeProto(t, numberRequest(1)))
	found := false
	for i := range c.streams.shards {
		for _, s := range c.streams.shards[i].m {
			switch {
			case s == old:
				t.Error("the forgotten stream is in the cache again")
			case labels.Equal(s.lset, old.lset):
				found = true
			}
		}
	}
	if !found {
		t.Errorf("after forgetting, no stream of %s", old.lset)
	}
}

// TestFastPathMetadata sends a metric under one name with two
// descriptions in turn, resource after resource: the store is asked for
// each name and metadata once a request, on both paths, first seen
// first.
func TestFastPathMetadata(t *testing.T) {
	p := newPaths(t, DefaultOptions())
	for n := range 3 {
		md := pmetric.NewMetrics()
		for r, desc := range []string{"a", "b", "a", "b"} {
			rm := md.ResourceMetrics().AppendEmpty()
			rm.Resource().Attributes().PutStr("service.name", "svc")
			rm.Resource().Attributes().PutStr("service.instance.id", fmt.Sprint(r))
			m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
			m.SetName("temperature")
			m.SetDescription(desc)
			pt := m.SetEmptyGauge().DataPoints().AppendEmpty()
			pt.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * time.Minute)))
			pt.SetDoubleValue(float64(r))
		}
		p.send(t, encodeProto(t, md))
		if got := strings.Count(strings.Join(p.fastRec.sorted(), "\n"), "# temperature "); got != 2 {
			t.Errorf("request %d: metadata set %d times, want 2, once for each description", n, got)
		}
	}
}
