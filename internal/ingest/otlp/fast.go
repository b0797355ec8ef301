package otlp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
	"unique"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	promstorage "github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc/codes"
)

// The fast path takes protobuf requests of gauges and sums (the bulk of
// OTLP metrics) without pdata and without building a label
// set per point. It walks the request's wire format in place and keys
// each data point by hashes of what its series' labels are made from:
// the resource, the scope, the metric's name, unit, description and
// kind, and the point's attributes, as bytes. A key seen before gives the
// series' labels and ref at once (a stream), most often without a lookup:
// it is first looked for where the last request had it (see predictions
// in fast_cache.go); a new one is translated by
// the reference path, Prometheus' converter, on a request made of that
// point alone, and remembered. So labels, names, metadata and target_info
// are the reference's by construction, and a steady stream of points
// allocates nothing per point.
//
// Deltas of sums that are to become cumulative are added up by the
// stream's state, which the stream keeps (see cumulative.go). Histograms,
// summaries and sums of other temporalities are handed to the converter
// metric by metric (convertMetric); histograms of delta temporality go
// through the Collector's processor first, once the whole request is
// walked. A request with anything else (exemplars on gauges and sums, a
// message given twice, a malformed message) is left to the reference
// path whole: nothing of it is stored by this one, and what it added to
// delta streams is taken back.
//
// Keys are two 64-bit hashes, of the metric and of the point's
// attributes: two streams would have to collide in both at once to be
// mistaken for each other. A stream costs about 350 bytes in the cache
// (most of it its labels), and is forgotten streamTTL after its last
// point.

// errSlow says a request is the reference path's.
var errSlow = errors.New("not for the fast path")

// streamTTL is how long a stream, a metric or a resource is remembered
// after it was last seen.
const streamTTL = 15 * time.Minute

// fastState is one request's state on the fast path, kept for the next.
type fastState struct {
	h   *Handler
	ctx context.Context
	wk  *work
	now int64
	// id tells the request from others (see metaSet); infoMeta says it
	// set target_info's metadata.
	id       uint64
	infoMeta bool
	total    int // data points
	// dropped counts the deltas not added to their stream.
	dropped int
	// deferred are the histograms of delta temporality, converted once
	// the request is walked (see deltaHistograms), and late the resources
	// they are in, whose target_info waits for them.
	deferred []deferredMetric
	late     []resourceCtx
	// seenInfo are the target_info samples appended, as the converter
	// keeps them: one per labels and timestamp in a request.
	seenInfo map[infoKey]struct{}
	attrs    xxhash.Digest
	// buf holds the parts of a request made of one point, for a miss.
	buf      [5][]byte
	capture  capture
	metadata [][]byte
	metrics  [][]byte // of the scope being walked
}

type infoKey struct {
	hash uint64
	t    int64
}

// fastWrite takes a protobuf request on the fast path. ok is false if the
// request is the reference path's: then nothing was stored.
func (h *Handler) fastWrite(ctx context.Context, body []byte, wk *work) (rep reply, ok bool) {
	app := h.app.Appender(ctx)
	wk.app.reset(app, &wk.rj)
	wk.begin()
	f := &wk.fast
	f.h, f.ctx, f.wk, f.now, f.total, f.dropped = h, ctx, wk, time.Now().Unix(), 0, 0
	f.id, f.infoMeta = h.cache.requests.Add(1), false
	if f.seenInfo == nil {
		f.seenInfo = map[infoKey]struct{}{}
	}
	clear(f.seenInfo)
	defer func() {
		f.ctx, f.wk = nil, nil
		clear(f.deferred)
		clear(f.late)
		f.deferred, f.late = f.deferred[:0], f.late[:0]
	}()
	rollback := func() {
		_ = app.Rollback()
		h.sums.undo(wk.undo)
	}

	err := f.request(body)
	switch {
	case wk.app.fault != nil:
		rollback()
		return serverFault(wk.app.fault), true
	case errors.Is(err, errSlow) || errors.Is(err, errWire):
		rollback()
		return reply{}, false
	case err != nil:
		rollback()
		return reply{status: http.StatusServiceUnavailable, code: codes.Unavailable, msg: err.Error()}, true
	}
	if rep, ok := h.throttle(f.total); !ok {
		rollback()
		return rep, true
	}
	if err := f.deltaHistograms(); err != nil {
		rollback()
		if wk.app.fault != nil {
			err = wk.app.fault
		}
		return serverFault(err), true
	}
	if err := app.Commit(); err != nil {
		h.sums.undo(wk.undo)
		return serverFault(err), true
	}
	h.cache.sweep(f.now)
	if h.sums != nil {
		h.sums.sweep(f.now)
	}
	if f.dropped > 0 {
		wk.rj.Add(0, droppedDeltas(f.dropped))
	}
	return h.outcome(f.total, wk), true
}

// request walks an ExportMetricsServiceRequest.
func (f *fastState) request(msg []byte) error {
	return eachBytes(msg, 1, f.resourceMetrics)
}

// single returns the bytes of the length-delimited field num of msg, and
// whether it is there. A message field given twice is merged by the
// protobuf rules, which the fast path leaves to the reference.
func single(msg []byte, num int) (out []byte, seen bool, err error) {
	err = eachBytes(msg, num, func(b []byte) error {
		if seen {
			return errSlow
		}
		out, seen = b, true
		return nil
	})
	return out, seen, err
}

// resourceMetrics walks a ResourceMetrics: its scopes' metrics, then the
// resource's target_info over the span of their points.
func (f *fastState) resourceMetrics(msg []byte) error {
	res, _, err := single(msg, 1)
	if err != nil {
		return err
	}
	rc := resourceCtx{raw: res, hash: xxhash.Sum64(res), earliest: math.MaxUint64}
	if rc.info, err = f.resourceInfo(&rc); err != nil {
		return err
	}
	err = eachField(msg, func(fld wireField) error {
		switch {
		case fld.num == 1000:
			return errSlow // instrumentation_library_metrics, of old senders
		case (fld.num == 2 || fld.num == 3) && fld.typ != wireBytes:
			return errWire
		case fld.num == 2:
			return f.scopeMetrics(fld.b, &rc)
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case rc.deferred:
		f.late = append(f.late, rc)
	case rc.earliest != math.MaxUint64:
		f.targetInfo(&rc)
	}
	return nil
}

// resourceInfo returns what is known of the resource, learning it (and
// that its bytes decode) the first time it is seen.
func (f *fastState) resourceInfo(rc *resourceCtx) (*resourceInfo, error) {
	c := f.h.cache
	ri := c.resource(rc.hash)
	if ri == nil {
		if _, err := f.translate(rc.raw, nil, probeMetric, false); err != nil {
			if errors.Is(err, errWire) {
				return nil, err
			}
			return nil, errSlow // the reference says what is wrong with it
		}
		ri = &resourceInfo{lset: f.capture.info}
		ri.hash = ri.lset.Hash()
		c.addResource(rc.hash, ri)
	}
	if ri.seen.Load() != f.now {
		ri.seen.Store(f.now)
	}
	return ri, nil
}

// resourceCtx is the resource being walked.
type resourceCtx struct {
	raw              []byte
	hash             uint64
	info             *resourceInfo
	earliest, latest uint64 // of its points' timestamps
	deferred         bool   // it has histograms of delta temporality
}

// scopeCtx is the scope being walked.
type scopeCtx struct {
	raw, schemaURL []byte
	hash           uint64
}

// scopeMetrics walks a ScopeMetrics: its scope and schema URL, which may
// come anywhere in it, then its metrics.
func (f *fastState) scopeMetrics(msg []byte, rc *resourceCtx) error {
	var scope, url []byte
	metrics := f.metrics[:0]
	defer func() { clear(metrics); f.metrics = metrics[:0] }()
	for i := 0; i < len(msg); {
		num, typ, _, lo, next := field(msg, i)
		switch {
		case next < 0:
			return errWire
		case num < 1 || num > 3:
		case typ != wireBytes:
			return errWire
		case num == 1:
			if scope != nil {
				return errSlow // merged by the protobuf rules: the reference's
			}
			scope = msg[lo:next]
		case num == 2:
			metrics = append(metrics, msg[lo:next])
		default:
			url = msg[lo:next] // the last one counts
		}
		i = next
	}
	sc := scopeCtx{raw: scope, schemaURL: url}
	var d xxhash.Digest
	d.Reset()
	writeUint64(&d, rc.hash)
	writePart(&d, scope)
	writePart(&d, url)
	sc.hash = d.Sum64()
	kn, err := f.checkOnce(sc.hash, rc.raw, &sc, nil)
	if err != nil {
		return err
	}
	var prev *family // the last metric walked on the fast path
	for _, metric := range metrics {
		if err := f.ctx.Err(); err != nil {
			return err
		}
		fam, err := f.metric(metric, rc, &sc, kn, prev)
		if err != nil {
			return err
		}
		if fam != nil {
			followFamily(kn, prev, fam)
			prev = fam
		}
	}
	return nil
}

// metricCtx is the metric being walked: what its points' series are
// made from besides their attributes.
type metricCtx struct {
	name, desc, unit []byte
	metadata         [][]byte // its metadata KeyValues, which only need to decode
	kind             int      // the Metric field of its data: metricGauge or metricSum
	temporality      uint64
	monotonic        bool
	hash             uint64
}

// Fields of a Metric holding its data.
const (
	metricGauge        = 5
	metricSum          = 7
	metricHistogram    = 9
	metricExpHistogram = 10
	metricSummary      = 11
)

// AggregationTemporality values.
const (
	temporalityDelta      = 1
	temporalityCumulative = 2
)

// convertMetric hands a metric the fast path does not translate itself
// (a histogram, a summary, a sum of delta temporality kept as it is) to the
// converter, on a request of that metric alone, into the request's
// appender: the converter translates metrics one by one, so this stores
// what it would of the metric in the whole request. Only target_info,
// made of the whole resource, is left to the fast path. Histograms of
// delta temporality that are to become cumulative wait until the request
// is walked (deltaHistograms).
func (f *fastState) convertMetric(metric, data []byte, rc *resourceCtx, sc *scopeCtx) error {
	delta := false
	err := eachField(data, func(fld wireField) error {
		if fld.num == 2 && fld.typ == wireVarint {
			delta = fld.v == temporalityDelta && f.h.d2c != nil
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = eachField(data, func(fld wireField) error {
		if fld.num != 1 || fld.typ != wireBytes {
			return nil
		}
		// A data point: counted, and its time (field 3 of every kind)
		// spans the resource's target_info.
		var t uint64
		err := eachField(fld.b, func(pf wireField) error {
			if pf.num == 3 && pf.typ == wireFixed64 {
				t = pf.v
			}
			return nil
		})
		f.total++
		if !delta {
			rc.earliest, rc.latest = min(rc.earliest, t), max(rc.latest, t)
		}
		return err
	})
	if err != nil {
		return err
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(f.assemble(rc.raw, sc, metric)); err != nil {
		return errWire
	}
	if delta {
		rc.deferred = true
		f.deferred = append(f.deferred, deferredMetric{md: req.Metrics(), res: len(f.late)})
		return nil
	}
	return f.convert(req.Metrics())
}

// convert runs the converter on md, a request of one metric, into the
// request's appender, without target_info.
func (f *fastState) convert(md pmetric.Metrics) error {
	conv := f.wk.converter
	conv.Reset(&f.wk.app)
	defer conv.Reset(nil)
	settings := f.h.settings
	settings.DisableTargetInfo = true
	_, errs := conv.FromMetrics(f.ctx, md, settings)
	if f.wk.app.fault != nil {
		return f.wk.app.fault
	}
	if err := f.ctx.Err(); err != nil {
		return err
	}
	for _, err := range unjoin(errs) {
		f.wk.rj.Add(0, err)
	}
	return nil
}

// deferredMetric is a request of one histogram of delta temporality, of
// the resource late[res].
type deferredMetric struct {
	md  pmetric.Metrics
	res int
}

// deltaHistograms converts the request's histograms of delta temporality
// through the Collector's processor, once nothing is left that could
// hand the request to the reference path: the processor's state cannot
// take back what it added. Then come the target_info samples of their
// resources, over the span of the points the processor kept.
func (f *fastState) deltaHistograms() error {
	for _, d := range f.deferred {
		rc, md := &f.late[d.res], d.md
		n := md.DataPointCount()
		f.wk.onFast = true
		err := f.h.d2c.ConsumeMetrics(context.WithValue(f.ctx, workKey{}, f.wk), md)
		f.wk.onFast = false
		if err != nil {
			return err
		}
		f.dropped += n - md.DataPointCount()
		spanPoints(md, rc)
	}
	for i := range f.late {
		if rc := &f.late[i]; rc.earliest != math.MaxUint64 {
			f.targetInfo(rc)
		}
	}
	return nil
}

// spanPoints widens rc's span to the times of md's histogram points.
func spanPoints(md pmetric.Metrics, rc *resourceCtx) {
	span := func(t pcommon.Timestamp) {
		rc.earliest, rc.latest = min(rc.earliest, uint64(t)), max(rc.latest, uint64(t))
	}
	for m := range allMetrics(md) {
		switch m.Type() {
		case pmetric.MetricTypeHistogram:
			for _, p := range m.Histogram().DataPoints().All() {
				span(p.Timestamp())
			}
		case pmetric.MetricTypeExponentialHistogram:
			for _, p := range m.ExponentialHistogram().DataPoints().All() {
				span(p.Timestamp())
			}
		}
	}
}

// metric walks a Metric of scope sc (known as kn), after the metric
// prev (nil: the first), and returns its family if its points were
// taken on the fast path.
func (f *fastState) metric(msg []byte, rc *resourceCtx, sc *scopeCtx, kn *known, prev *family) (*family, error) {
	mc := metricCtx{metadata: f.metadata[:0]}
	defer func() { f.metadata = mc.metadata[:0] }()
	var data []byte
	for i := 0; i < len(msg); {
		num, typ, _, lo, next := field(msg, i)
		switch {
		case next < 0:
			return nil, errWire
		case typ != wireBytes:
			switch num {
			case 1, 2, 3, metricGauge, metricSum, metricHistogram, metricExpHistogram, metricSummary, 12:
				return nil, errWire
			}
		case num == 1:
			mc.name = msg[lo:next]
		case num == 2:
			mc.desc = msg[lo:next]
		case num == 3:
			mc.unit = msg[lo:next]
		case num == metricGauge || num == metricSum || num == metricHistogram || num == metricExpHistogram || num == metricSummary:
			if mc.kind != 0 {
				return nil, errSlow
			}
			mc.kind, data = num, msg[lo:next]
		case num == 12:
			mc.metadata = append(mc.metadata, msg[lo:next])
		}
		i = next
	}
	switch mc.kind {
	case 0:
		return nil, errSlow
	case metricHistogram, metricExpHistogram, metricSummary:
		return nil, f.convertMetric(msg, data, rc, sc)
	}
	if mc.kind == metricSum {
		// The temporality follows the points, as senders encode a Sum.
		for i := 0; i < len(data); {
			num, typ, v, _, next := field(data, i)
			switch {
			case next < 0:
				return nil, errWire
			case num != 2 && num != 3:
			case typ != wireVarint:
				return nil, errWire
			case num == 2:
				mc.temporality = v
			default:
				mc.monotonic = v != 0
			}
			i = next
		}
		if mc.temporality != temporalityCumulative && (mc.temporality != temporalityDelta || f.h.sums == nil) {
			return nil, f.convertMetric(msg, data, rc, sc)
		}
	}
	var d xxhash.Digest
	d.Reset()
	writeUint64(&d, sc.hash)
	writePart(&d, mc.name)
	writePart(&d, mc.desc)
	writePart(&d, mc.unit)
	var flags uint64
	if mc.monotonic {
		flags = 1
	}
	writeUint64(&d, uint64(mc.kind)<<8|mc.temporality<<1|flags)
	for _, md := range mc.metadata {
		writePart(&d, md)
	}
	mc.hash = d.Sum64()
	fam := nextFamily(kn, prev, mc.hash)
	if fam == nil {
		fam = f.h.cache.family(mc.hash)
	}
	if fam == nil {
		// A metric with a family decoded when it got it.
		if _, err := f.checkOnce(mc.hash, rc.raw, sc, f.metricMsg(&mc, nil)); err != nil {
			return nil, err
		}
	}
	return f.points(data, rc, sc, &mc, fam)
}

// point is a NumberDataPoint as the fast path reads it: v is its value
// as a sample's, i and kind what it was.
type point struct {
	attrs       uint64 // hash of its attributes
	start, time uint64
	v           float64
	i           int64
	kind        pmetric.NumberDataPointValueType
	flags       uint64
}

// parsePoint reads a NumberDataPoint. Its attributes are hashed as they
// are encoded, field by field: senders write them one after another, and
// then they are hashed in one go.
//
// It decodes the fields itself rather than through nextField: a point is
// a dozen small fields, most of them attributes only skipped here, and
// the call and the field it returns cost more than the decoding (a third
// of the fast path's time in a profile at 10k streams).
func (f *fastState) parsePoint(msg []byte) (point, error) {
	var (
		p point
		// span holds the attribute fields so far, msg[spanFrom:spanTo],
		// while they are contiguous; then d has them.
		spanFrom, spanTo = -1, -1
		hashing          bool
	)
	d := &f.attrs
	for i := 0; i < len(msg); {
		num, typ, v, _, end := field(msg, i)
		if end < 0 {
			return p, errWire
		}
		want := -1
		switch num {
		case 7:
			want = wireBytes
			switch {
			case hashing:
				_, _ = d.Write(msg[i:end])
			case spanFrom < 0:
				spanFrom, spanTo = i, end
			case spanTo == i:
				spanTo = end
			default:
				// Interleaved with other fields: hash field by field.
				hashing = true
				d.Reset()
				_, _ = d.Write(msg[spanFrom:spanTo])
				_, _ = d.Write(msg[i:end])
			}
		case 2:
			want, p.start = wireFixed64, v
		case 3:
			want, p.time = wireFixed64, v
		case 4:
			want, p.v, p.i, p.kind = wireFixed64, math.Float64frombits(v), 0, pmetric.NumberDataPointValueTypeDouble
		case 6:
			want, p.v, p.i, p.kind = wireFixed64, float64(int64(v)), int64(v), pmetric.NumberDataPointValueTypeInt
		case 8:
			want, p.flags = wireVarint, v
		case 5:
			return p, errSlow // exemplars
		}
		if want >= 0 && typ != want {
			return p, errWire
		}
		i = end
	}
	switch {
	case hashing:
		p.attrs = d.Sum64()
	case spanFrom < 0:
		p.attrs = xxhash.Sum64(nil)
	default:
		p.attrs = xxhash.Sum64(msg[spanFrom:spanTo])
	}
	return p, nil
}

// points appends a metric's data points, stopping, as the converter
// does, at the first whose labels cannot be made. It returns the
// metric's family (nil if it has none yet: no point made a stream).
func (f *fastState) points(data []byte, rc *resourceCtx, sc *scopeCtx, mc *metricCtx, fam *family) (*family, error) {
	c := f.h.cache
	stopped, ok := false, false
	var prev *stream // the last point's
	for i := 0; i < len(data); {
		num, typ, _, lo, next := field(data, i)
		switch {
		case next < 0:
			return fam, errWire
		case num != 1:
			i = next
			continue
		case typ != wireBytes:
			return fam, errWire
		}
		i = next
		pt := data[lo:next]
		p, err := f.parsePoint(pt)
		if err != nil {
			return fam, err
		}
		f.total++
		if stopped {
			rc.earliest, rc.latest = min(rc.earliest, p.time), max(rc.latest, p.time)
			continue
		}
		key := streamKey{mc.hash, p.attrs}
		s := nextStream(fam, prev, key)
		if s == nil {
			s = c.stream(key)
		}
		if s == nil || fam == nil {
			if s, fam, err = f.miss(key, pt, rc, sc, mc); err != nil {
				switch {
				case errors.Is(err, errWire):
					return fam, err
				case errors.Is(err, errStreams):
					f.dropped++
					continue
				}
				rc.earliest, rc.latest = min(rc.earliest, p.time), max(rc.latest, p.time)
				f.wk.rj.Add(0, err)
				stopped = true
				continue
			}
		}
		start, v := p.start, p.v
		switch {
		case p.flags&1 != 0: // no recorded value
			v = math.Float64frombits(value.StaleNaN)
		case mc.temporality == temporalityDelta:
			if start, v, ok = f.addDelta(s, p); !ok {
				f.dropped++
				continue
			}
		}
		followStream(fam, prev, s)
		prev = s
		rc.earliest, rc.latest = min(rc.earliest, p.time), max(rc.latest, p.time)
		ref := s.ref.Load()
		if m := fam.meta; m.req.Load() != f.id {
			if f.wk.app.setMetadata(fam.opts) != nil {
				return fam, f.wk.app.fault
			}
			m.req.Store(f.id)
			if m.seen.Load() != f.now {
				m.seen.Store(f.now)
			}
		}
		r, _ := f.wk.app.appendSample(promstorage.SeriesRef(ref), s.lset, int64(start)/1_000_000, int64(p.time)/1_000_000, v, nil, nil, fam.opts)
		if f.wk.app.fault != nil {
			return fam, f.wk.app.fault
		}
		if r != 0 && uint64(r) != ref {
			s.ref.Store(uint64(r))
		}
		if s.seen.Load() != f.now {
			s.seen.Store(f.now)
		}
	}
	if fam != nil && fam.seen.Load() != f.now {
		fam.seen.Store(f.now)
	}
	return fam, nil
}

// addDelta adds delta p to stream s's state, and returns the start time
// and value of the point to store; ok is false if p is dropped.
func (f *fastState) addDelta(s *stream, p point) (start uint64, v float64, ok bool) {
	st := s.sum.Load()
	acc, now, err := f.h.sums.add(st, sumDelta{start: p.start, time: p.time, i: p.i, f: p.v, kind: p.kind}, f.now, &f.wk.undo)
	if now != nil && now != st {
		s.sum.Store(now)
	}
	if err != nil {
		return 0, 0, false
	}
	return acc.start, acc.value(), true
}

// miss translates a point of a new stream with the reference converter,
// on a request made of the point with its metric, scope and resource,
// and remembers its series and its metric's translation. A delta is
// translated as the cumulative point it becomes, and its stream's state
// is found by the stream's identity (errStreams: there are too many).
func (f *fastState) miss(key streamKey, pt []byte, rc *resourceCtx, sc *scopeCtx, mc *metricCtx) (*stream, *family, error) {
	delta := mc.temporality == temporalityDelta
	tm := *mc
	if delta {
		tm.temporality = temporalityCumulative
	}
	req, err := f.translate(rc.raw, sc, f.metricMsg(&tm, pt), true)
	if err != nil {
		return nil, nil, err
	}
	if f.capture.n == 0 {
		return nil, nil, fmt.Errorf("metric %q: a data point the translation made no sample of", mc.name)
	}
	s := f.h.cache.newStream(key, f.capture.lset)
	if delta {
		rm := req.Metrics().ResourceMetrics().At(0)
		sm := rm.ScopeMetrics().At(0)
		m := sm.Metrics().At(0)
		st, err := f.h.sums.stream(streamID(rm.Resource(), sm.Scope(), m, m.Sum().DataPoints().At(0)))
		if err != nil {
			return nil, nil, err
		}
		s.sum.Store(st)
	}
	s.seen.Store(f.now)
	s = f.h.cache.addStream(key, s)
	fam := &family{key: mc.hash, opts: internOptions(f.capture.opts)}
	fam.meta = f.h.cache.metaSet(fam.opts, f.now)
	fam.seen.Store(f.now)
	return s, f.h.cache.addFamily(mc.hash, fam), nil
}

// internOptions returns o with its strings interned: a metric's family
// is kept per resource, and a request of many resources sets the same
// metadata for each (see appender.setMetadata), so families of one name
// share its bytes, which stay in the processor's cache.
func internOptions(o promstorage.AOptions) promstorage.AOptions {
	o.MetricFamilyName = unique.Make(o.MetricFamilyName).Value()
	o.Metadata.Type = model.MetricType(unique.Make(string(o.Metadata.Type)).Value())
	o.Metadata.Help = unique.Make(o.Metadata.Help).Value()
	o.Metadata.Unit = unique.Make(o.Metadata.Unit).Value()
	return o
}

// metricMsg encodes the metric mc with pt as its only data point (none if
// pt is nil).
func (f *fastState) metricMsg(mc *metricCtx, pt []byte) []byte {
	data := f.buf[0][:0]
	if pt != nil {
		data = appendBytesField(data, 1, pt)
	}
	if mc.kind == metricSum {
		data = appendVarintField(data, 2, mc.temporality)
		if mc.monotonic {
			data = appendVarintField(data, 3, 1)
		}
	}
	metric := appendBytesField(f.buf[1][:0], 1, mc.name)
	metric = appendBytesField(metric, 2, mc.desc)
	metric = appendBytesField(metric, 3, mc.unit)
	metric = appendBytesField(metric, mc.kind, data)
	for _, md := range mc.metadata {
		metric = appendBytesField(metric, 12, md)
	}
	f.buf[0], f.buf[1] = data, metric
	return metric
}

// checkOnce checks, the first time key is seen, that a request of metric
// (nil: none) in scope sc of resource res decodes: the fast path does not
// look into everything a decoder does, and a request the reference
// refuses must not be taken.
func (f *fastState) checkOnce(key uint64, res []byte, sc *scopeCtx, metric []byte) (*known, error) {
	c := f.h.cache
	if kn := c.checked(key, f.now); kn != nil {
		return kn, nil
	}
	if err := pmetricotlp.NewExportRequest().UnmarshalProto(f.assemble(res, sc, metric)); err != nil {
		return nil, errWire
	}
	return c.check(key, f.now), nil
}

// assemble encodes a request of metric (nil: none) in scope sc (nil: an
// empty one) of resource res.
func (f *fastState) assemble(res []byte, sc *scopeCtx, metric []byte) []byte {
	var scope []byte
	if sc != nil {
		if sc.raw != nil {
			scope = appendBytesField(f.buf[2][:0], 1, sc.raw)
		}
		if metric != nil {
			scope = appendBytesField(scope, 2, metric)
		}
		if len(sc.schemaURL) > 0 {
			scope = appendBytesField(scope, 3, sc.schemaURL)
		}
	} else if metric != nil {
		scope = appendBytesField(f.buf[2][:0], 2, metric)
	}
	var rm []byte
	if res != nil {
		rm = appendBytesField(f.buf[3][:0], 1, res)
	}
	rm = appendBytesField(rm, 2, scope)
	body := appendBytesField(f.buf[4][:0], 1, rm)
	f.buf[2], f.buf[3], f.buf[4] = scope, rm, body
	return body
}

// translate runs the converter on a request of one metric in scope sc (nil:
// an empty one) of resource res, into f.capture, without target_info if
// point is set: then what it captures is the metric's point alone. It
// returns the request. A request that does not decode is errWire: the
// reference path answers it.
func (f *fastState) translate(res []byte, sc *scopeCtx, metric []byte, point bool) (pmetricotlp.ExportRequest, error) {
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(f.assemble(res, sc, metric)); err != nil {
		return req, errWire
	}
	f.capture = capture{}
	conv := f.wk.converter
	conv.Reset(&f.capture)
	defer conv.Reset(nil)
	settings := f.h.settings
	settings.DisableTargetInfo = point
	_, err := conv.FromMetrics(f.ctx, req.Metrics(), settings)
	if f.capture.n == 0 && err != nil {
		return req, err
	}
	return req, nil
}

// probeMetric is the metric translate is given to learn a resource's
// target_info: a gauge with one point, at 1 ns.
var probeMetric = appendBytesField(appendBytesField(nil, 1, []byte("probe")), metricGauge,
	appendBytesField(nil, 1, binary.LittleEndian.AppendUint64([]byte{3<<3 | wireFixed64}, 1)))

// targetInfo appends the resource's target_info samples over the span of
// its points, as the converter does: one every half lookback delta from
// the earliest and one at the latest, each labels and time once in a
// request.
func (f *fastState) targetInfo(rc *resourceCtx) {
	ri := rc.info
	if ri.lset.IsEmpty() {
		return
	}
	interval := f.h.settings.LookbackDelta / 2
	if interval == 0 {
		interval = defaultLookbackDelta / 2
	}
	earliest, latest := time.Unix(0, int64(rc.earliest)), time.Unix(0, int64(rc.latest))
	for t := earliest; t.Before(latest); t = t.Add(interval) {
		if f.infoSample(ri, t.UnixMilli()) != nil {
			return
		}
	}
	_ = f.infoSample(ri, latest.UnixMilli())
}

// defaultLookbackDelta is the converter's when its settings give none.
const defaultLookbackDelta = 5 * time.Minute

var infoOpts = promstorage.AOptions{
	Metadata:         metadata.Metadata{Type: model.MetricTypeGauge, Help: "Target metadata"},
	MetricFamilyName: targetInfo,
}

// infoSample appends a target_info sample at t unless the request has
// one. An error (the resource's span too long) is counted, and ends the
// resource's samples.
func (f *fastState) infoSample(ri *resourceInfo, t int64) error {
	k := infoKey{ri.hash, t}
	if _, ok := f.seenInfo[k]; ok {
		return nil
	}
	f.seenInfo[k] = struct{}{}
	if !f.infoMeta {
		if err := f.wk.app.setMetadata(infoOpts); err != nil {
			return err
		}
		f.infoMeta = true
	}
	if _, err := f.wk.app.appendSample(0, ri.lset, 0, t, 1, nil, nil, infoOpts); err != nil {
		if f.wk.app.fault == nil {
			f.wk.rj.Add(0, err)
		}
		return err
	}
	return nil
}

// capture is the converter's appender on a miss: it keeps the first
// sample's labels and options (on a request of a point without
// target_info, the point's) and the first target_info labels (on the
// probe's request, the resource's).
type capture struct {
	n    int
	lset labels.Labels
	opts promstorage.AOptions
	info labels.Labels
}

func (c *capture) Append(_ promstorage.SeriesRef, ls labels.Labels, _, _ int64, _ float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	c.n++
	if c.n == 1 {
		c.lset, c.opts = ls.Copy(), opts
		c.opts.Exemplars = nil
	}
	if c.info.IsEmpty() && opts.MetricFamilyName == targetInfo && opts.Metadata == infoOpts.Metadata && ls.Get(model.MetricNameLabel) == targetInfo {
		c.info = ls.Copy()
	}
	return 0, nil
}

func (c *capture) Commit() error   { return nil }
func (c *capture) Rollback() error { return nil }

var _ promstorage.AppenderV2 = (*capture)(nil)

// writePart writes b to d with its length first, so that parts cannot
// run into each other.
func writePart(d *xxhash.Digest, b []byte) {
	writeUint64(d, uint64(len(b)))
	_, _ = d.Write(b)
}

func writeUint64(d *xxhash.Digest, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	_, _ = d.Write(b[:])
}
