package otlp

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatautil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Sums of delta temporality become cumulative here, stream by stream, as
// the OpenTelemetry Collector's deltatocumulative processor makes them
// (it is still the one used for histograms). A stream's first delta is
// its first cumulative point, with the delta's start time; each later
// delta is added to the stream's value, and the point stored carries the
// stream's start time and the delta's time. A delta that starts before
// its stream does, or whose time is not after the stream's newest, is
// dropped: it is out of order, or a duplicate.
//
// Both paths share the state. A stream is found by the reference's
// identity: the resource's attributes, the scope's name, version and
// attributes, the metric's name, unit and monotonicity, and the point's
// attributes, hashed in a canonical order (so however a sender orders
// them). The reference path looks it up for every point; the fast path
// only when it learns a stream, and keeps the state with it.
//
// A request that is not stored (a fault of the store, the rate limit, a
// request the fast path hands to the reference) takes back what it
// added, so that its retry is added and not dropped as a duplicate.

// sumID is a delta stream's identity.
type sumID [16]byte

// sumState is a delta stream's cumulative value. id is immutable; the
// rest is guarded by mu.
type sumState struct {
	id  sumID
	mu  sync.Mutex
	acc sumAcc
	// gen counts the points added (less those taken back): an undo
	// restores the state only if nothing was added since, which a value
	// cannot tell (NaN is not equal to itself).
	gen  uint64
	seen int64 // unix seconds of the last point
	gone bool  // forgotten: whoever holds it looks the stream up again
}

// sumAcc is a stream's cumulative point; a time of 0 is none yet.
// Values are kept as the points give them: integers as integers, so
// that they add up exactly.
type sumAcc struct {
	start, time uint64 // ns
	i           int64
	f           float64
	isInt       bool
}

// value is the point's value as a sample's.
func (a sumAcc) value() float64 {
	if a.isInt {
		return float64(a.i)
	}
	return a.f
}

// sumDelta is a delta point.
type sumDelta struct {
	start, time uint64
	i           int64
	f           float64
	kind        pmetric.NumberDataPointValueType
}

var (
	errOlderStart = errors.New("starts before its stream")
	errNotNewer   = errors.New("not newer than its stream's newest")
	errStreams    = errors.New("too many delta streams")
)

// add adds p to a, as the reference does: a value of the other type
// than the stream's replaces it, one of neither type adds nothing.
func (a *sumAcc) add(p sumDelta) error {
	switch {
	case a.time == 0:
		*a = sumAcc{start: p.start, time: p.time, i: p.i, f: p.f, isInt: p.kind == pmetric.NumberDataPointValueTypeInt}
		return nil
	case p.start < a.start:
		return errOlderStart
	case p.time <= a.time:
		return errNotNewer
	}
	switch p.kind {
	case pmetric.NumberDataPointValueTypeInt:
		if !a.isInt {
			a.i, a.isInt = 0, true
		}
		a.i += p.i
	case pmetric.NumberDataPointValueTypeDouble:
		if a.isInt {
			a.f, a.isInt = 0, false
		}
		a.f += p.f
	}
	a.time = p.time
	return nil
}

// sumUndo is a change to a stream made by a request, to take back if
// the request is not stored.
type sumUndo struct {
	s      *sumState
	before sumAcc
	gen    uint64 // the state's gen after the change
}

// deltaSums is the state of every delta sum stream.
type deltaSums struct {
	maxStale   int64 // seconds; 0: streams are kept
	maxStreams int64 // 0: no limit
	n          atomic.Int64
	streams    shardedMap[sumID, *sumState]
	swept      atomic.Int64 // unix seconds of the last sweep
}

func newDeltaSums(maxStale int64, maxStreams int, now int64) *deltaSums {
	d := &deltaSums{maxStale: maxStale, maxStreams: int64(maxStreams)}
	d.streams.init(func(id sumID) uint64 { return uint64(id[0]) | uint64(id[1])<<8 })
	d.swept.Store(now)
	return d
}

// stream returns the state of stream id, new if it has none.
func (d *deltaSums) stream(id sumID) (*sumState, error) {
	if s, ok := d.streams.get(id); ok {
		return s, nil
	}
	if d.maxStreams > 0 && d.n.Load() >= d.maxStreams {
		return nil, errStreams
	}
	s := &sumState{id: id}
	kept := d.streams.add(id, s)
	if kept == s {
		d.n.Add(1)
	}
	return kept, nil
}

// add adds p to stream s, or to the state that replaced it if s was
// forgotten, and returns the point to store and the state it is in now.
// The change is logged in undo.
func (d *deltaSums) add(s *sumState, p sumDelta, now int64, undo *[]sumUndo) (sumAcc, *sumState, error) {
	s.mu.Lock()
	for s.gone {
		s.mu.Unlock()
		var err error
		if s, err = d.stream(s.id); err != nil {
			return sumAcc{}, nil, err
		}
		s.mu.Lock()
	}
	before := s.acc
	err := s.acc.add(p)
	after := s.acc
	if err == nil {
		s.seen = now
		s.gen++
	}
	gen := s.gen
	s.mu.Unlock()
	if err != nil {
		return sumAcc{}, s, err
	}
	*undo = append(*undo, sumUndo{s, before, gen})
	return after, s, nil
}

// undo takes back the changes in log, newest first. A stream another
// request has changed since keeps its value: that request's point, stored
// or not, was added on top of this one's.
func (d *deltaSums) undo(log []sumUndo) {
	if d == nil {
		return
	}
	for i := len(log) - 1; i >= 0; i-- {
		u := &log[i]
		u.s.mu.Lock()
		if u.s.gen == u.gen {
			u.s.acc = u.before
			u.s.gen--
		}
		u.s.mu.Unlock()
	}
}

// sweep forgets, at most once a minute, the streams not seen for
// maxStale: their next delta starts them again, under its start time.
func (d *deltaSums) sweep(now int64) {
	last := d.swept.Load()
	if d.maxStale == 0 || now-last < 60 || !d.swept.CompareAndSwap(last, now) {
		return
	}
	var n int64
	d.streams.deleteIf(func(s *sumState) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.seen >= now-d.maxStale {
			return false
		}
		s.gone = true
		n++
		return true
	})
	d.n.Add(-n)
}

// cumulative turns md's delta sums cumulative in place: each point added
// to its stream and given the stream's start time and value, the points
// dropped removed, the sums marked cumulative. A point with no recorded
// value is left as it is (a stale marker), and not added.
func (d *deltaSums) cumulative(md pmetric.Metrics, now int64, undo *[]sumUndo) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		res := rms.At(i).Resource()
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			scope := sms.At(j).Scope()
			sms.At(j).Metrics().RemoveIf(func(m pmetric.Metric) bool {
				if m.Type() != pmetric.MetricTypeSum || m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityDelta {
					return false
				}
				m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
					return !d.point(res, scope, m, p, now, undo)
				})
				m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				return m.Sum().DataPoints().Len() == 0
			})
		}
	}
}

// point makes delta p of metric m cumulative, or reports that it is
// dropped.
func (d *deltaSums) point(res pcommon.Resource, scope pcommon.InstrumentationScope, m pmetric.Metric, p pmetric.NumberDataPoint, now int64, undo *[]sumUndo) bool {
	if p.Flags().NoRecordedValue() {
		return true
	}
	s, err := d.stream(streamID(res, scope, m, p))
	if err != nil {
		return false
	}
	acc, _, err := d.add(s, sumDelta{start: uint64(p.StartTimestamp()), time: uint64(p.Timestamp()),
		i: p.IntValue(), f: p.DoubleValue(), kind: p.ValueType()}, now, undo)
	if err != nil {
		return false
	}
	p.SetStartTimestamp(pcommon.Timestamp(acc.start))
	if acc.isInt {
		p.SetIntValue(acc.i)
	} else {
		p.SetDoubleValue(acc.f)
	}
	return true
}

// streamID is the identity of the stream of point p of sum m.
func streamID(res pcommon.Resource, scope pcommon.InstrumentationScope, m pmetric.Metric, p pmetric.NumberDataPoint) sumID {
	mono := "0"
	if m.Sum().IsMonotonic() {
		mono = "1"
	}
	return pdatautil.Hash(
		pdatautil.WithMap(res.Attributes()),
		pdatautil.WithString(scope.Name()),
		pdatautil.WithString(scope.Version()),
		pdatautil.WithMap(scope.Attributes()),
		pdatautil.WithString(m.Name()),
		pdatautil.WithString(m.Unit()),
		pdatautil.WithString(mono),
		pdatautil.WithMap(p.Attributes()),
	)
}

// droppedDeltas says why points of delta temporality were not stored.
func droppedDeltas(n int) error {
	return fmt.Errorf("%d delta points dropped by the conversion to cumulative: older than their stream's newest, or of a stream beyond --otlp.delta.max-streams", n)
}
