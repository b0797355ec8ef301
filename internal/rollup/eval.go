package rollup

import (
	"cmp"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/kahansum"

	stratachunkenc "github.com/strata-db/strata/internal/chunkenc"
)

// errWhole says that an inner cannot be evaluated here: the query runs
// whole in Prometheus' engine (see the package comment).
var errWhole = errors.New("rollup: query runs whole in Prometheus' engine")

// steps are the times (ms) a query is evaluated at: start, start+interval,
// ... up to end; an instant query's interval is 0 and it has one.
type steps struct{ start, end, interval int64 }

func (s steps) count() int {
	if s.interval <= 0 {
		return 1
	}
	return int((s.end-s.start)/s.interval) + 1
}

func (s steps) at(k int) int64 { return s.start + int64(k)*s.interval }

// result is an inner's value: series with a value, or none, at each step.
type result struct {
	series []resultSeries
}

type resultSeries struct {
	lset labels.Labels
	vals []float64 // at each step; meaningless where has is false
	has  []bool
}

// evaluator evaluates inners. It is used by one goroutine, and spreads
// the work of each batch of series over its workers.
type evaluator struct {
	maxSamples int
	// workers hold the buffers of the goroutines that load and window
	// series: GOMAXPROCS of them, made by the first eval.
	workers []*seriesEval
	// batches are two batches' slots: the workers work on one while the
	// series of the other are read and the results of the one before
	// taken.
	batches [2][]seriesSlot
	// outputs are the labels of a function's results, for duplicates.
	outputs []output
}

// output is a function result's labels and their hash.
type output struct {
	hash uint64
	lset labels.Labels
}

// evaluators keeps evaluators and their buffers from one query to the
// next: a query's series are read into the same buffers again.
var evaluators = sync.Pool{New: func() any { return &evaluator{} }}

// seriesEval loads series and computes their windows, reusing its
// buffers from one series to the next.
type seriesEval struct {
	it     chunkenc.Iterator
	ts     []int64
	vals   stratachunkenc.Values
	resets []int
	w      window
	// planTs are the sample times of the last series windowed, for the
	// windowing planID; the series of one target share their sample
	// times, and with them their windows. The second series with the
	// same times makes a plan of where each step's window lies, which
	// the next ones read (planned); a plan costs time to write, which
	// the series of targets that have one each would not get back.
	planTs  []int64
	planID  uint64
	planned bool
	plan    []stepWindow
}

// stepWindow is a step's window of a series' samples, lo to hi-1, and
// what extrapolatedRate worked out from their times.
type stepWindow struct {
	lo, hi int
	rate   rateFactor
}

// seriesSlot is a series of a batch and what a worker made of it.
type seriesSlot struct {
	series storage.Series
	vals   []float64 // at each step; meaningless where has is false
	has    []bool
	got    int // steps with a value
	err    error
}

// batchSeries is how many series a batch holds: the series a worker
// takes come from a counter they share, so a batch keeps both cores busy
// unless its series differ much in length, while the results wait to be
// taken in the order of the series set.
const batchSeries = 64

// eval evaluates in over st from q. It returns errWhole where the query
// must run whole in Prometheus' engine.
//
// Series are read from the storage a batch at a time; the workers load
// and window the batch's series in parallel, the costly part (decoding
// every sample), and the results are then taken in the order of the
// series set, as the engine would take them: aggregations add them up in
// the same order, so that the sums are the engine's to the bit. While
// the workers are on a batch, this goroutine reads the next batch's
// series and takes the results of the one before: reading series
// (labels, chunk lists) and aggregating results left a core idle while
// they ran.
func (ev *evaluator) eval(ctx context.Context, q storage.Queryable, in *inner, st steps, lookback time.Duration) (*result, annotations.Annotations, error) {
	wd := windowing{st: st, offset: in.vs.OriginalOffset, id: windowings.Add(1)}
	var funcName string
	if in.call != nil {
		funcName = in.call.Func.Name
		wd.rng, wd.fn = in.ms.Range, windowFuncs[funcName]
	} else {
		wd.rng, wd.fn = lookback, selectorFunc
	}
	// The samples the engine's selector reads: those of every step's
	// window, (ts-offset-range, ts-offset].
	mint := st.start - wd.offset.Milliseconds() - wd.rng.Milliseconds()
	maxt := st.end - wd.offset.Milliseconds()
	querier, err := q.Querier(mint, maxt)
	if err != nil {
		return nil, nil, err
	}
	defer querier.Close()
	hints := &storage.SelectHints{Start: mint, End: maxt, Step: st.interval, Func: funcName}
	if in.ms != nil {
		hints.Range = in.ms.Range.Milliseconds()
	}
	if in.agg != nil {
		hints.By, hints.Grouping = !in.agg.Without, in.agg.Grouping
	}
	ss := querier.Select(ctx, false, hints, in.vs.LabelMatchers...)

	n := st.count()
	var (
		annos annotations.Annotations
		res   = &result{}
		agg   *aggregator
		// points counts the function's results, for the sample limit.
		points int
	)
	ev.outputs = ev.outputs[:0]
	// Two results with the same labels fail the engine's query. Series
	// are unique, so only a function's results can be the same, having
	// lost the metric name and the type and unit labels: of the series of
	// one metric name, only two that differ in type or unit only.
	checkDups := in.call != nil && !oneName(in.vs.LabelMatchers)
	if in.agg != nil {
		agg = newAggregator(in.agg, n)
	}
	isCounterFunc := funcName == "rate" || funcName == "increase"
	if ev.workers == nil {
		for range max(runtime.GOMAXPROCS(0), 1) {
			ev.workers = append(ev.workers, &seriesEval{})
		}
		for i := range ev.batches {
			ev.batches[i] = make([]seriesSlot, batchSeries)
		}
	}
	// take adds the results of a processed batch to res or agg, in order.
	take := func(batch []seriesSlot) error {
		for i := range batch {
			sl := &batch[i]
			if sl.err != nil {
				return sl.err
			}
			if sl.got == 0 {
				continue
			}
			points += sl.got
			if points > ev.maxSamples {
				// The engine holds every point of the function's results at once.
				return errWhole
			}
			lset := sl.series.Labels()
			if name := lset.Get(labels.MetricName); isCounterFunc && name != "" && !counterName(name) {
				annos.Add(annotations.NewPossibleNonCounterInfo(name, in.call.Args[0].PositionRange()))
			}
			out := lset
			if in.call != nil {
				out = lset.DropReserved(schema.IsMetadataLabel)
				ev.outputs = append(ev.outputs, output{lset: out})
				checkDups = checkDups || out.Len() < lset.Len()-1
			}
			if agg != nil {
				agg.add(out, sl.vals, sl.has)
				continue
			}
			res.series = append(res.series, resultSeries{lset: out, vals: slices.Clone(sl.vals), has: slices.Clone(sl.has)})
		}
		return nil
	}
	var (
		prev []seriesSlot // the batch the workers are on, or were
		wait = func() {}
	)
	defer func() {
		// The workers must be done with a batch before its slots are
		// reused, and before eval returns. The evaluator is kept for the
		// next query: it keeps the slots' vals and has, not what this
		// one read.
		wait()
		for _, b := range ev.batches {
			for i := range b {
				b[i].series = nil
			}
		}
		clear(ev.outputs)
	}()
	for k := 0; ; k ^= 1 {
		if err := ctx.Err(); err != nil {
			return nil, annos, err
		}
		cur := ev.batches[k][:0]
		for len(cur) < batchSeries && ss.Next() {
			cur = append(cur, seriesSlot{series: ss.At(), vals: ev.batches[k][len(cur)].vals, has: ev.batches[k][len(cur)].has})
		}
		wait()
		wait = func() {}
		if len(cur) > 0 {
			wait = ev.start(cur, wd)
		}
		if prev != nil {
			if err := take(prev); err != nil {
				return nil, annos, err
			}
		}
		if len(cur) == 0 {
			break
		}
		prev = cur
	}
	if err := ss.Err(); err != nil {
		return nil, annos, err
	}
	if checkDups {
		for i := range ev.outputs {
			ev.outputs[i].hash = ev.outputs[i].lset.Hash()
		}
		if duplicates(ev.outputs) {
			// The engine fails the query: two results with the same labels.
			return nil, annos, errWhole
		}
	}
	annos.Merge(ss.Warnings())
	if agg != nil {
		res.series = agg.result()
	}
	return res, annos, nil
}

// oneName reports whether ms select the series of one metric name.
func oneName(ms []*labels.Matcher) bool {
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual && m.Value != "" {
			return true
		}
	}
	return false
}

// duplicates reports whether two of outs have the same labels. It sorts
// them by hash.
func duplicates(outs []output) bool {
	slices.SortFunc(outs, func(a, b output) int { return cmp.Compare(a.hash, b.hash) })
	for i := 1; i < len(outs); i++ {
		for j := i - 1; j >= 0 && outs[j].hash == outs[i].hash; j-- {
			if labels.Equal(outs[j].lset, outs[i].lset) {
				return true
			}
		}
	}
	return false
}

// start loads and windows the series of batch, and returns the function
// that waits until that is done. The workers take them in goroutines of
// their own if they are strata's series: their chunks are in memory, or
// mapped, by the time Select returns them, and reading them concurrently
// with each other and with the series set is safe. Other storage
// (Prometheus' TSDB in tests) may share a reader between the iterators of
// its series: its series are loaded one at a time, here, before start
// returns.
func (ev *evaluator) start(batch []seriesSlot, wd windowing) (wait func()) {
	var next atomic.Int64
	work := func(se *seriesEval) {
		for i := next.Add(1) - 1; i < int64(len(batch)); i = next.Add(1) - 1 {
			se.do(&batch[i], wd)
		}
	}
	if slices.ContainsFunc(batch, func(sl seriesSlot) bool { _, ok := sl.series.(*stratachunkenc.Series); return !ok }) {
		work(ev.workers[0])
		return func() {}
	}
	var wg sync.WaitGroup
	for _, se := range ev.workers[:min(len(ev.workers), len(batch))] {
		wg.Go(func() { work(se) })
	}
	return wg.Wait
}

// windowing is what the workers compute of each series: fn over the
// windows of range rng, offset, at each step of st. Its id tells one
// eval's windowing from another's.
type windowing struct {
	st          steps
	offset, rng time.Duration
	fn          rangeFunc
	id          uint64
}

// windowings counts evals, for their windowings' ids.
var windowings atomic.Uint64

// do loads the series of sl and computes its windows.
func (se *seriesEval) do(sl *seriesSlot, wd windowing) {
	se.it = sl.series.Iterator(se.it)
	if sl.err = se.load(se.it, wd); sl.err == nil {
		sl.got = se.windows(sl, wd)
	}
}

// counterName reports whether a metric's name says it is a counter, as
// the engine checks before rate and increase.
func counterName(name string) bool {
	return strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_sum") ||
		strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_bucket")
}

// valuesAppender is an iterator that hands out all its samples at once
// (strata's chunkenc.SeriesIterator).
type valuesAppender interface {
	AppendValues(ts []int64, vals *stratachunkenc.Values, every int64) ([]int64, bool, error)
}

// load reads a series' float samples into ts and vals as wd's function
// needs them: without staleness markers, as range selectors read them,
// and with its counter resets found, unless it is a selector's.
func (ev *seriesEval) load(it chunkenc.Iterator, wd windowing) error {
	f := wd.fn
	ev.ts, ev.resets = ev.ts[:0], ev.resets[:0]
	ev.vals.Reset()
	if va, ok := it.(valuesAppender); ok {
		// A function that reads a few values of each window reads
		// them a step apart; of an instant query's one window, the
		// range apart.
		every := wd.st.interval
		if every == 0 {
			every = wd.rng.Milliseconds()
		}
		if f.floats {
			every = 0
		}
		ts, ok, err := va.AppendValues(ev.ts, &ev.vals, every)
		if err != nil {
			return err
		}
		if !ok {
			return errWhole
		}
		ev.ts = ts
	} else {
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				return errWhole
			}
			t, v := it.At()
			ev.ts = append(ev.ts, t)
			ev.vals.Append(v)
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	if f.keepStale {
		return nil
	}
	ev.ts, ev.resets = ev.vals.DropStale(ev.ts, ev.resets)
	return nil
}

// windows fills sl's vals and has with fn of the loaded series over each
// step's window, the samples in (ts-offset-range, ts-offset], and
// returns the number of steps with a value. Where the series has the
// sample times of the last series windowed the same way, its windows
// are where that one's were (see seriesEval.planTs).
func (ev *seriesEval) windows(sl *seriesSlot, wd windowing) int {
	st, offset, rng := wd.st, wd.offset, wd.rng
	n := st.count()
	sl.vals = slices.Grow(sl.vals[:0], n)[:n]
	sl.has = slices.Grow(sl.has[:0], n)[:n]
	clear(sl.has)
	ts := ev.ts
	selRange := rng.Milliseconds()
	// The window is the worker's, so that passing it to fn does not
	// allocate.
	w := &ev.w
	// Functions that read every value of their windows have them as floats.
	vs, _ := ev.vals.Floats()
	*w = window{ts: ts, vals: &ev.vals, vs: vs, resets: ev.resets, rangeMs: (rng + offset).Milliseconds(), offsetMs: offset.Milliseconds(), rangeSeconds: rng.Seconds()}
	got := 0
	same := wd.id == ev.planID && sameTimes(ts, ev.planTs)
	if same && ev.planned {
		if x := wd.fn.extrapolated; x != nil {
			return w.plannedRates(sl, ev.plan, x.counter, x.rate)
		}
		for k, p := range ev.plan {
			if p.lo == p.hi {
				continue
			}
			w.at, w.k, w.lo, w.hi = st.at(k), k, p.lo, p.hi
			if v, ok := wd.fn.fn(w); ok {
				sl.vals[k], sl.has[k] = v, true
				got++
			}
		}
		return got
	}
	if same {
		ev.plan = slices.Grow(ev.plan[:0], n)[:n]
		w.plan, ev.planned = ev.plan, true
	} else {
		// The next load appends to the times of the series before.
		ev.planID, ev.planTs, ev.ts, ev.planned = wd.id, ts, ev.planTs, false
	}
	for k := range n {
		w.at, w.k = st.at(k), k
		maxt := w.at - w.offsetMs
		mint := maxt - selRange
		// A step moves a window by a sample or two, or by many: it steps
		// through the next five, and searches past them.
		if w.hi+4 < len(ts) && ts[w.hi+4] <= maxt {
			w.hi = search(ts, w.hi+5, maxt)
		}
		for w.hi < len(ts) && ts[w.hi] <= maxt {
			w.hi++
		}
		if w.lo+4 < w.hi && ts[w.lo+4] <= mint {
			w.lo = search(ts[:w.hi], w.lo+5, mint)
		}
		for w.lo < w.hi && ts[w.lo] <= mint {
			w.lo++
		}
		if w.plan != nil {
			w.plan[k].lo, w.plan[k].hi = w.lo, w.hi
		}
		if w.lo == w.hi {
			continue
		}
		if v, ok := wd.fn.fn(w); ok {
			sl.vals[k], sl.has[k] = v, true
			got++
		}
	}
	return got
}

// sameTimes reports whether a and b hold the same timestamps. It
// compares their memory as strings are compared, many bytes at a time:
// a day of samples every 15 s is 46 KB, which an element-wise loop
// compared in 3.7% of the CPU of a day-long range query of node_load1.
func sameTimes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	return unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*8) ==
		unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*8)
}

// search returns the first index from lo on of a sample after t, in ts
// sorted, or len(ts), for a window that moves by many samples: it
// strides from lo, doubling, and searches the last stride.
func search(ts []int64, lo int, t int64) int {
	stride := 8
	for lo+stride < len(ts) && ts[lo+stride] <= t {
		lo += stride + 1
		stride *= 2
	}
	hi := min(lo+stride, len(ts))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ts[m] <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// window is a step's window of a loaded series: samples lo to hi-1.
type window struct {
	ts   []int64
	vals *stratachunkenc.Values
	// vs are the values as floats, for functions that read all of a
	// window's (see rangeFunc.floats); nil for the others.
	vs     []float64
	resets []int // indices of samples lower than the one before
	lo, hi int
	r      int // the first of resets past lo, kept up by rate
	at     int64
	rate   rateTimes // of the last window extrapolatedRate computed
	// plan, where not nil, holds every step's window as it is made; k
	// is this one's step.
	plan []stepWindow
	k    int
	// rangeMs is the selector's range and offset, offsetMs its offset,
	// in ms; rangeSeconds its range in seconds: the same for every window,
	// worked out once.
	rangeMs, offsetMs int64
	rangeSeconds      float64
}

// value returns the i'th value of the series.
func (w *window) value(i int) float64 {
	if w.vs != nil {
		return w.vs[i]
	}
	return w.vals.At(i)
}

// A windowFunc computes a range function's value over a non-empty
// window, as Prometheus' function of the same name computes it for
// float samples, or says there is none.
type windowFunc func(w *window) (float64, bool)

// rangeFunc is a windowFunc and what it reads of a series' samples.
type rangeFunc struct {
	fn windowFunc
	// floats says fn reads every value of its windows (window.vs), not
	// a few of them (window.vals.At): the series' values are made floats
	// as they are loaded, not as fn reads them.
	floats bool
	// keepStale keeps the staleness markers in the loaded samples, for a
	// selector's lookback.
	keepStale bool
	// extrapolated is set for the functions of extrapolatedRate: what
	// it extrapolates, for windows of a plan (plannedRates).
	extrapolated *extrapolation
}

// extrapolation is what extrapolatedRate computes: of a counter, whose
// resets it adds back, and a rate, per second.
type extrapolation struct{ counter, rate bool }

// windowFuncs are the range functions an inner may apply.
var windowFuncs = map[string]rangeFunc{
	"rate":          {fn: func(w *window) (float64, bool) { return w.extrapolatedRate(true, true) }, extrapolated: &extrapolation{counter: true, rate: true}},
	"increase":      {fn: func(w *window) (float64, bool) { return w.extrapolatedRate(true, false) }, extrapolated: &extrapolation{counter: true}},
	"delta":         {fn: func(w *window) (float64, bool) { return w.extrapolatedRate(false, false) }, extrapolated: &extrapolation{}},
	"irate":         {fn: func(w *window) (float64, bool) { return instantValue(w, true) }},
	"idelta":        {fn: func(w *window) (float64, bool) { return instantValue(w, false) }},
	"changes":       {fn: changes, floats: true},
	"resets":        {fn: resets},
	"sum_over_time": {fn: sumOverTime, floats: true},
	"avg_over_time": {fn: avgOverTime, floats: true},
	"min_over_time": {fn: func(w *window) (float64, bool) {
		return extremeOverTime(w, func(cur, x float64) bool { return cur < x })
	}, floats: true},
	"max_over_time": {fn: func(w *window) (float64, bool) {
		return extremeOverTime(w, func(cur, x float64) bool { return cur > x })
	}, floats: true},
	"count_over_time": {fn: func(w *window) (float64, bool) { return float64(w.hi - w.lo), true }},
}

// selectorFunc is an instant vector selector's value at each step: the
// last sample of its lookback window, staleness markers included.
var selectorFunc = rangeFunc{fn: lastValue, keepStale: true}

// lastValue is an instant vector selector's value at a step: the last
// sample of its lookback window, or none if that is a staleness marker.
func lastValue(w *window) (float64, bool) {
	v := w.value(w.hi - 1)
	return v, !value.IsStaleNaN(v)
}

// extrapolatedRate is the rate (isCounter, isRate), increase (isCounter)
// or delta over the window, computed as Prometheus' extrapolatedRate
// computes it. What that works out from the window's sample times alone
// takes six divisions, most waiting on another's result; rateTimes keeps
// it from one window to the next where the samples lie alike: their
// count and span, as for most windows of a regularly scraped series,
// and also where they lie in the range, as for every window where the
// step is a multiple of the scrape interval. The window's plan keeps it
// for the next series with the same sample times (plannedRates).
func (w *window) extrapolatedRate(isCounter, isRate bool) (float64, bool) {
	ts, lo, hi := w.ts, w.lo, w.hi
	if hi-lo < 2 {
		return 0, false
	}
	firstT, lastT := ts[lo], ts[hi-1]
	rt := &w.rate
	if sampled, n := lastT-firstT, hi-lo; sampled != rt.sampled || n != rt.n {
		rt.setSpan(sampled, n)
	}
	if toStart, toEnd := firstT-(w.at-w.rangeMs), (w.at-w.offsetMs)-lastT; !rt.ends || toStart != rt.toStart || toEnd != rt.toEnd {
		rt.setEnds(toStart, toEnd, isRate, w.rangeSeconds)
	}
	if w.plan != nil {
		// Field by field: a copy of the whole struct loads it in words
		// that setEnds' stores, just made, cannot be forwarded to.
		p := &w.plan[w.k].rate
		p.sampledInterval, p.durationToStart, p.durationToEnd, p.factor, p.toZero = rt.sampledInterval, rt.durationToStart, rt.durationToEnd, rt.factor, rt.toZero
	}
	return w.rateWith(&rt.rateFactor, isCounter, isRate), true
}

// plannedRates fills sl's vals and has with extrapolatedRate over the
// windows of plan, from the times it holds, and returns the number of
// steps with a value: as windows does, without two calls a step.
func (w *window) plannedRates(sl *seriesSlot, plan []stepWindow, isCounter, isRate bool) int {
	got := 0
	for k := range plan {
		p := &plan[k]
		if p.hi-p.lo < 2 {
			continue
		}
		w.lo, w.hi = p.lo, p.hi
		sl.vals[k], sl.has[k] = w.rateWith(&p.rate, isCounter, isRate), true
		got++
	}
	return got
}

// rateWith is extrapolatedRate over a window of at least two samples,
// with the factors rf of its times.
func (w *window) rateWith(rf *rateFactor, isCounter, isRate bool) float64 {
	first := w.value(w.lo)
	result := w.value(w.hi-1) - first
	if isCounter {
		for _, r := range w.resetsIn() {
			result += w.value(r - 1)
		}
	}
	factor := rf.factor
	// A counter cannot go below zero: extrapolate to the start no
	// further than to where it would have been zero, where that is
	// nearer than the start, as it is not where zeroFar says so.
	if isCounter && result > 0 && first >= 0 && !rf.zeroFar(first, result) {
		if durationToZero := rf.sampledInterval * (first / result); durationToZero < rf.durationToStart {
			factor = rf.factorFrom(durationToZero, isRate, w.rangeSeconds)
		}
	}
	return result * factor
}

// rateTimes is what extrapolatedRate works out from a window's sample
// times, as Prometheus' extrapolatedRate computes it: from the span of
// its samples and their count (at least 2), and from where the first
// and last lie in the range, its rateFactor.
type rateTimes struct {
	// The span, last minus first timestamp, and the count; what follows
	// from them.
	sampled             int64
	n                   int
	threshold, halfStep float64
	// Whether the ends are set, for the span: how far the first sample
	// is from the range's start and the last from its end, in ms.
	ends           bool
	toStart, toEnd int64
	rateFactor
}

// rateFactor is what extrapolatedRate needs of a window's times: the
// span of its samples and the durations to extrapolate by, in seconds,
// and the factor that scales the window's increase, unless a counter's
// zero is nearer than the start.
type rateFactor struct {
	sampledInterval, durationToStart, durationToEnd, factor, toZero float64
}

// setSpan sets the times of windows of n samples spanning sampled ms.
func (rt *rateTimes) setSpan(sampled int64, n int) {
	rt.sampled, rt.n, rt.ends = sampled, n, false
	rt.sampledInterval = float64(sampled) / 1000
	averageDurationBetweenSamples := rt.sampledInterval / float64(n-1)
	rt.threshold = averageDurationBetweenSamples * 1.1
	rt.halfStep = averageDurationBetweenSamples / 2
}

// setEnds sets the times of windows of the span set whose first sample
// is toStart ms from the range's start and last toEnd ms from its end.
func (rt *rateTimes) setEnds(toStart, toEnd int64, isRate bool, rangeSeconds float64) {
	rt.ends, rt.toStart, rt.toEnd = true, toStart, toEnd
	rt.durationToStart = float64(toStart) / 1000
	if rt.durationToStart >= rt.threshold {
		rt.durationToStart = rt.halfStep
	}
	rt.durationToEnd = float64(toEnd) / 1000
	if rt.durationToEnd >= rt.threshold {
		rt.durationToEnd = rt.halfStep
	}
	rt.factor = rt.factorFrom(rt.durationToStart, isRate, rangeSeconds)
	rt.toZero = rt.durationToStart * (1 + 1e-6)
}

// zeroFar reports, without a division, that a counter window's zero,
// extrapolated from its first value and its increase result (both
// positive), is not nearer than the start: Prometheus' durationToZero,
// sampledInterval*(first/result), is at least durationToStart. It
// checks first*sampledInterval >= result*durationToStart with a margin
// of a millionth (toZero), by far more than the rounding of the
// operations on either side (a few parts in 10^16) while the right side
// is a normal float; if it reports false, the zero may be nearer.
func (rf *rateFactor) zeroFar(first, result float64) bool {
	beyond := result * rf.toZero
	return first*rf.sampledInterval >= beyond && beyond >= minNormal && beyond <= math.MaxFloat64
}

// minNormal is the smallest normal float64: a product below it may have
// lost more precision than zeroFar's margin.
const minNormal = 0x1p-1022

// factorFrom returns the factor that scales a window's increase, for
// extrapolating by durationToStart and rf's durationToEnd.
func (rf *rateFactor) factorFrom(durationToStart float64, isRate bool, rangeSeconds float64) float64 {
	factor := 1.0
	if rf.sampledInterval != 0 {
		factor = (rf.sampledInterval + durationToStart + rf.durationToEnd) / rf.sampledInterval
	}
	if isRate {
		factor /= rangeSeconds
	}
	return factor
}

// resetsIn returns the window's samples that are lower than the one
// before them (in the window), in order.
func (w *window) resetsIn() []int {
	for w.r < len(w.resets) && w.resets[w.r] <= w.lo {
		w.r++
	}
	end := w.r
	for end < len(w.resets) && w.resets[end] < w.hi {
		end++
	}
	return w.resets[w.r:end]
}

// instantValue is Prometheus' irate (isRate) or idelta of floats: from
// the window's last two samples.
func instantValue(w *window, isRate bool) (float64, bool) {
	if w.hi-w.lo < 2 {
		return 0, false
	}
	t0, t1 := w.ts[w.hi-2], w.ts[w.hi-1]
	v0, v1 := w.value(w.hi-2), w.value(w.hi-1)
	sampledInterval := t1 - t0
	if sampledInterval == 0 {
		return 0, false
	}
	result := v1
	if !isRate || !(v1 < v0) {
		// A gauge, or a counter without a reset (or with a NaN).
		result = v1 - v0
	}
	if isRate {
		result /= float64(sampledInterval) / 1000
	}
	return result, true
}

// changes is Prometheus' changes of floats: how many samples differ from
// the one before, NaN not differing from NaN.
func changes(w *window) (float64, bool) {
	n := 0
	vs := w.vs[w.lo:w.hi]
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1] && !(math.IsNaN(vs[i]) && math.IsNaN(vs[i-1])) {
			n++
		}
	}
	return float64(n), true
}

// resets is Prometheus' resets of floats: how many samples are lower
// than the one before.
func resets(w *window) (float64, bool) { return float64(len(w.resetsIn())), true }

// sumOverTime is Prometheus' sum_over_time of floats: a Kahan sum.
func sumOverTime(w *window) (float64, bool) {
	var sum, c float64
	for _, f := range w.vs[w.lo:w.hi] {
		sum, c = kahansum.Inc(f, sum, c)
	}
	if math.IsInf(sum, 0) {
		return sum, true
	}
	return sum + c, true
}

// avgOverTime is Prometheus' avg_over_time of floats: the Kahan sum
// divided by the count while it does not overflow, then an incremental
// mean.
func avgOverTime(w *window) (float64, bool) {
	vs := w.vs[w.lo:w.hi]
	var (
		sum, count      = vs[0], 1.
		mean, kahanC    float64
		incrementalMean bool
	)
	for i, f := range vs[1:] {
		count = float64(i + 2)
		if !incrementalMean {
			newSum, newC := kahansum.Inc(f, sum, kahanC)
			if !math.IsInf(newSum, 0) {
				sum, kahanC = newSum, newC
				continue
			}
			incrementalMean = true
			mean = sum / (count - 1)
			kahanC /= (count - 1)
		}
		q := (count - 1) / count
		mean, kahanC = kahansum.Inc(f/count, q*mean, q*kahanC)
	}
	if incrementalMean {
		return mean + kahanC, true
	}
	return sum/count + kahanC/count, true
}

// extremeOverTime is Prometheus' min_over_time or max_over_time of
// floats: the sample for which beats(sample, best) held last, a NaN
// giving way to whatever follows it.
func extremeOverTime(w *window, beats func(cur, best float64) bool) (float64, bool) {
	vs := w.vs[w.lo:w.hi]
	best := vs[0]
	for _, f := range vs {
		if beats(f, best) || math.IsNaN(best) {
			best = f
		}
	}
	return best, true
}

// aggregator aggregates the function's results into groups, step by
// step, as the engine's aggregation does for float samples: series are
// added in the order the engine would see them, and each group's value
// at a step is computed with the engine's arithmetic in that order.
type aggregator struct {
	op       parser.ItemType
	without  bool
	grouping []string // sorted
	steps    int
	index    map[uint64]int
	groups   []group
	buf      []byte
}

type group struct {
	lset labels.Labels
	accs []acc
}

// acc is a group's aggregate at one step (the engine's groupedAggregation
// for floats).
type acc struct {
	seen            bool
	incrementalMean bool
	value           float64
	mean            float64
	kahanC          float64
	count           float64
}

func newAggregator(e *parser.AggregateExpr, steps int) *aggregator {
	grouping := slices.Clone(e.Grouping)
	slices.Sort(grouping)
	return &aggregator{op: e.Op, without: e.Without, grouping: grouping, steps: steps, index: map[uint64]int{}}
}

// add adds a series' values at the steps where has is true.
func (a *aggregator) add(lset labels.Labels, vals []float64, has []bool) {
	var key uint64
	switch {
	case a.without:
		key, a.buf = lset.HashWithoutLabels(a.buf, a.grouping...)
	case len(a.grouping) > 0:
		key, a.buf = lset.HashForLabels(a.buf, a.grouping...)
	}
	g, ok := a.index[key]
	if !ok {
		g = len(a.groups)
		a.index[key] = g
		a.groups = append(a.groups, group{lset: a.groupLabels(lset), accs: make([]acc, a.steps)})
	}
	accs := a.groups[g].accs[:len(vals)]
	has = has[:len(vals)]
	switch a.op {
	case parser.SUM:
		// The commonest aggregations: a step's addition without a call.
		for k, f := range vals {
			if !has[k] {
				continue
			}
			if c := &accs[k]; c.seen {
				c.value, c.kahanC = kahansum.Inc(f, c.value, c.kahanC)
			} else {
				a.addAt(c, f)
			}
		}
		return
	case parser.AVG:
		// While the sum does not overflow (see addAt).
		for k, f := range vals {
			if !has[k] {
				continue
			}
			c := &accs[k]
			if c.seen && !c.incrementalMean {
				if v, kc := kahansum.Inc(f, c.value, c.kahanC); !math.IsInf(v, 0) {
					c.value, c.kahanC = v, kc
					c.count++
					continue
				}
			}
			a.addAt(c, f)
		}
		return
	}
	for k, f := range vals {
		if has[k] {
			a.addAt(&accs[k], f)
		}
	}
}

// groupLabels returns the labels of the group lset falls into.
func (a *aggregator) groupLabels(lset labels.Labels) labels.Labels {
	b := labels.NewBuilder(lset)
	switch {
	case a.without:
		b.Del(a.grouping...)
		b.Del(labels.MetricName)
		return b.Labels()
	case len(a.grouping) > 0:
		b.Keep(a.grouping...)
		return b.Labels()
	}
	return labels.EmptyLabels()
}

// addAt adds f to a group's aggregate at one step; a sum's additions
// after the first value are add's own.
func (a *aggregator) addAt(g *acc, f float64) {
	if !g.seen {
		*g = acc{seen: true, value: f, mean: f, count: 1}
		if a.op == parser.GROUP {
			g.value = 1
		}
		return
	}
	switch a.op {
	case parser.AVG:
		// The sum while it does not overflow, then an incremental mean.
		g.count++
		if !g.incrementalMean {
			v, c := kahansum.Inc(f, g.value, g.kahanC)
			if !math.IsInf(v, 0) {
				g.value, g.kahanC = v, c
				return
			}
			g.incrementalMean = true
			g.mean = g.value / (g.count - 1)
			g.kahanC /= g.count - 1
		}
		q := (g.count - 1) / g.count
		g.mean, g.kahanC = kahansum.Inc(f/g.count, q*g.mean, q*g.kahanC)
	case parser.MAX:
		if g.value < f || math.IsNaN(g.value) {
			g.value = f
		}
	case parser.MIN:
		if g.value > f || math.IsNaN(g.value) {
			g.value = f
		}
	case parser.COUNT:
		g.count++
	}
}

// result returns the groups' values, in the order the groups were first
// seen.
func (a *aggregator) result() []resultSeries {
	out := make([]resultSeries, 0, len(a.groups))
	for _, g := range a.groups {
		rs := resultSeries{lset: g.lset, vals: make([]float64, a.steps), has: make([]bool, a.steps)}
		for k, c := range g.accs {
			if !c.seen {
				continue
			}
			rs.has[k] = true
			switch a.op {
			case parser.SUM:
				rs.vals[k] = c.value + c.kahanC
			case parser.AVG:
				if c.incrementalMean {
					rs.vals[k] = c.mean + c.kahanC
				} else {
					rs.vals[k] = c.value/c.count + c.kahanC/c.count
				}
			case parser.COUNT:
				rs.vals[k] = c.count
			default:
				rs.vals[k] = c.value
			}
		}
		out = append(out, rs)
	}
	return out
}
