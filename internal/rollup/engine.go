package rollup

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/stats"
)

// Options configure an Engine.
type Options struct {
	// Engine is Prometheus' engine: it evaluates what is around the
	// inners, and every query this package does not take. Required.
	Engine promql.QueryEngine
	// Parser parses queries as Engine's does. nil means
	// parser.NewParser(parser.Options{}).
	Parser parser.Parser
	// MaxSamples is Engine's limit on samples held at once: an inner
	// whose function results have more points runs in Engine, which
	// reports it.
	MaxSamples int
	// DelayedNameRemoval says Engine keeps __name__ until the end of a
	// query. Its queries run whole in Engine: it changes what rate's
	// results carry.
	DelayedNameRemoval bool
	// LookbackDelta is Engine's lookback for queries whose options do not
	// set one; 0 means Prometheus' default, 5m.
	LookbackDelta time.Duration
	// UseStartTimestamps says Engine's rate, increase, irate and resets
	// take the samples' start times into account (Prometheus'
	// use-start-timestamps feature). Those functions are then left to
	// Engine.
	UseStartTimestamps bool
}

// defaultLookbackDelta is Prometheus' engine's lookback unless set.
const defaultLookbackDelta = 5 * time.Minute

// Engine is a promql.QueryEngine that evaluates the inners of a query
// (see the package comment) itself and the rest in Prometheus' engine.
// It is safe for concurrent use.
type Engine struct {
	opts  Options
	taken atomic.Int64 // queries whose inners were evaluated here, for tests
}

// New returns an Engine.
func New(opts Options) *Engine {
	if opts.Parser == nil {
		opts.Parser = parser.NewParser(parser.Options{})
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = defaultLookbackDelta
	}
	return &Engine{opts: opts}
}

// Alone reports whether the query qs is one inner alone, which Engine
// evaluates and answers without Prometheus' engine, unless its series
// turn out to hold native histograms; it reads and windows them on all
// cores.
func (e *Engine) Alone(qs string) bool {
	if e.opts.DelayedNameRemoval {
		return false
	}
	pl := newPlan(e.opts.Parser, qs, e.opts.UseStartTimestamps)
	return pl != nil && pl.alone
}

// ErrNotTaken is a query's error, under a context from NoFallback, where
// Engine cannot evaluate its inners (native histograms, too many points,
// two results with the same labels) and would run it whole in
// Prometheus' engine.
var ErrNotTaken = errors.New("rollup: the query runs whole in Prometheus' engine")

type noFallbackKey struct{}

// NoFallback returns a context for a query's Exec under which a query
// Engine cannot evaluate itself fails with ErrNotTaken, for a caller
// that would run it otherwise (in parts on several cores).
func NoFallback(ctx context.Context) context.Context {
	return context.WithValue(ctx, noFallbackKey{}, true)
}

func (e *Engine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, ts, ts, 0)
}

func (e *Engine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, start, end, interval)
}

func (e *Engine) newQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	whole := func(q storage.Queryable, qs string) (promql.Query, error) {
		if interval == 0 {
			return e.opts.Engine.NewInstantQuery(ctx, q, opts, qs, start)
		}
		return e.opts.Engine.NewRangeQuery(ctx, q, opts, qs, start, end, interval)
	}
	// An instant query gains too, though the engine reads its one window
	// once: the engine copies the window and reads the series on one
	// core, the rollup does neither.
	var pl *plan
	if !e.opts.DelayedNameRemoval && (opts == nil || !opts.EnablePerStepStats()) {
		pl = newPlan(e.opts.Parser, qs, e.opts.UseStartTimestamps)
	}
	if pl == nil {
		return whole(q, qs)
	}
	// The lookback of the query's selectors, as the engine takes it.
	lookback := e.opts.LookbackDelta
	if opts != nil && opts.LookbackDelta() > 0 {
		lookback = opts.LookbackDelta()
	}
	v := &virtual{Queryable: q, steps: steps{start: timestamp.FromTime(start), end: timestamp.FromTime(end), interval: interval.Milliseconds()}}
	rewritten, err := whole(v, pl.rewritten)
	if err != nil {
		// The original query's error, as the engine words it.
		return whole(q, qs)
	}
	return &query{
		Query: rewritten, plan: pl, virtual: v, qs: qs, maxSamples: e.opts.MaxSamples, lookback: lookback, taken: &e.taken,
		whole: func() (promql.Query, error) { return whole(q, qs) },
	}, nil
}

// query runs a rewritten query: the inners first, then the rest in
// Prometheus' engine; or the original query whole, if an inner cannot
// be evaluated here.
type query struct {
	promql.Query // running: the rewritten query, or the original
	plan         *plan
	virtual      *virtual
	qs           string
	maxSamples   int
	lookback     time.Duration
	whole        func() (promql.Query, error)
	taken        *atomic.Int64

	mu       sync.Mutex
	canceled bool
	cancel   context.CancelFunc // of the inners' evaluation
	// stats are the query's statistics where it is answered without
	// the engine (see answer); nil otherwise.
	stats *stats.Statistics
	// points hold the answer's points, from pointsPool, until Close.
	points *[]promql.FPoint
}

// pointsPool keeps the points of answers from one query to the next, as
// the engine keeps those of its own answers: a day-long range query's
// are megabytes, which would otherwise be allocated and collected each
// time.
var pointsPool = sync.Pool{New: func() any { return new([]promql.FPoint) }}

func (q *query) Exec(ctx context.Context) *promql.Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q.mu.Lock()
	if q.canceled {
		cancel()
	}
	q.cancel = cancel
	q.mu.Unlock()

	var annos annotations.Annotations
	ev := evaluators.Get().(*evaluator)
	defer evaluators.Put(ev)
	ev.maxSamples = q.maxSamples
	var st *stats.Statistics
	if q.plan.alone {
		st = &stats.Statistics{Timers: stats.NewQueryTimers(), Samples: stats.NewQuerySamples(false)}
		defer st.Timers.GetTimer(stats.ExecTotalTime).Start().Stop()
		defer st.Timers.GetTimer(stats.EvalTotalTime).Start().Stop()
	}
	for _, in := range q.plan.inners {
		res, ws, err := ev.eval(ctx, q.virtual.Queryable, in, q.virtual.steps, q.lookback)
		if err != nil {
			if err == errWhole && ctx.Value(noFallbackKey{}) != nil {
				return &promql.Result{Err: ErrNotTaken}
			}
			// errWhole, or the query was canceled or timed out, or the
			// storage failed: the engine reports each its own way.
			return q.execWhole(ctx)
		}
		annos.Merge(ws)
		q.virtual.results = append(q.virtual.results, res)
	}
	q.taken.Add(1)
	if st != nil {
		// Only a range query's answer takes points.
		var points *[]promql.FPoint
		if q.virtual.steps.interval != 0 {
			points = pointsPool.Get().(*[]promql.FPoint)
		}
		v := q.answer(q.virtual.results[0], st.Samples, points)
		q.mu.Lock()
		q.stats, q.points = st, points
		q.mu.Unlock()
		return &promql.Result{Value: v, Warnings: annos}
	}
	res := q.Query.Exec(ctx)
	res.Warnings = annos.Merge(res.Warnings)
	return res
}

// answer returns the answer to a query that is the one inner whose
// result is res: the engine's answer to the rewritten query, a selector
// of the result's series, whose lookback finds each step's value. In a
// range query's matrix the series are sorted by their labels, as the
// engine sorts them; in an instant query's vector they are in the
// result's order, as the engine selects them. It counts the samples the
// engine would have read, and held at once, in samples. A range query's
// points go into points' memory; an instant query takes none (points may
// be nil).
func (q *query) answer(res *result, samples *stats.QuerySamples, points *[]promql.FPoint) parser.Value {
	st := q.virtual.steps
	n := 0
	for _, s := range res.series {
		for _, ok := range s.has {
			if ok {
				n++
			}
		}
	}
	samples.TotalSamples, samples.PeakSamples = int64(n), n
	if st.interval == 0 {
		// A result's series has a value at a step at least: here, the one.
		vec := make(promql.Vector, len(res.series))
		for i, s := range res.series {
			vec[i] = promql.Sample{Metric: s.lset, F: s.vals[0], T: st.start}
		}
		return vec
	}
	mat := make(promql.Matrix, 0, len(res.series))
	fs := slices.Grow((*points)[:0], n)
	for _, s := range res.series {
		from := len(fs)
		for k, ok := range s.has {
			if ok {
				fs = append(fs, promql.FPoint{T: st.at(k), F: s.vals[k]})
			}
		}
		if len(fs) > from {
			mat = append(mat, promql.Series{Metric: s.lset, Floats: fs[from:len(fs):len(fs)]})
		}
	}
	*points = fs
	sort.Sort(mat)
	return mat
}

// execWhole runs the original query in Prometheus' engine.
func (q *query) execWhole(ctx context.Context) *promql.Result {
	whole, err := q.whole()
	if err != nil {
		return &promql.Result{Err: err}
	}
	q.mu.Lock()
	q.Query.Close()
	q.Query = whole
	q.mu.Unlock()
	return whole.Exec(ctx)
}

func (q *query) Cancel() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.canceled = true
	if q.cancel != nil {
		q.cancel()
	}
	q.Query.Cancel()
}

func (q *query) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Query.Close()
	if q.points != nil {
		pointsPool.Put(q.points)
		q.points = nil
	}
}

func (q *query) Stats() *stats.Statistics {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stats != nil {
		return q.stats
	}
	return q.Query.Stats()
}

func (q *query) Statement() parser.Statement {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.Query.Statement()
}

// String returns the query as it was given.
func (q *query) String() string { return q.qs }
