package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/strata-db/strata/internal/rollup"
)

// minStepsPerPart is the fewest steps a part of a split range query
// evaluates. Each part selects its series anew and the response is
// encoded by one core, so a part must do enough work to be worth it.
// Measured on two cores over 10k node-exporter series, two parts against
// the whole query: 240 or 60 steps over 24 h took 0.59-0.80 of the time
// for 10-25% more CPU; parts of 10-15 steps still cut the time of
// aggregations over rates (0.7-0.8) but not that of plain selectors, for
// up to 60% more CPU.
const minStepsPerPart = 30

// A range query's value at a step depends only on the data before that
// step (within the selectors' ranges, offsets and lookback), not on where
// the query starts or ends: Prometheus' engine aligns subqueries to
// multiples of their own step, not to the query's start. So the steps of
// a range query can be evaluated in parts, each a range query over a run
// of consecutive steps, at the same time on different cores, and the
// parts' results put end to end are the query's. Only `@ start()` and
// `@ end()` refer to the query's bounds; queries using them run whole.

// splitParts returns into how many parts a range query from startMs to
// endMs at stepMs, for expression qs, is split: 1 if it is not.
func (a *API) splitParts(qs string, startMs, endMs, stepMs int64) int {
	if a.rangeParallelism < 2 || stepMs <= 0 {
		return 1
	}
	parts := min(int64(a.rangeParallelism), ((endMs-startMs)/stepMs+1)/minStepsPerPart)
	if parts < 2 {
		return 1
	}
	expr, err := a.parser.ParseExpr(qs)
	if err != nil || refersToBounds(expr) {
		// A query that does not parse gets its error from the engine.
		return 1
	}
	return int(parts)
}

// refersToBounds reports whether expr uses `@ start()` or `@ end()`.
func refersToBounds(expr parser.Expr) bool {
	found := false
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			found = found || n.StartOrEnd != 0
		case *parser.SubqueryExpr:
			found = found || n.StartOrEnd != 0
		}
		return nil
	})
	return found
}

// execTaken runs the range query qs whole in the rollup if it is one
// inner alone (rollup.Engine.Alone), and reports whether it did: the
// rollup reads and windows its series on all cores already and answers
// it without the engine, and splitting it added a tenth to its CPU and
// took no time off (24 h of 10k series, range queries of node_load1 and
// sums of rates: 0.85-0.92 of the CPU, 0.8-1.0 of the time whole). A
// query with more around its inners (a histogram_quantile, a topk) is
// split: the engine evaluates that part on one core. A query whose
// series hold native histograms, which the rollup leaves to the engine,
// is not run: the caller splits it.
func (a *API) execTaken(ctx context.Context, cancel context.CancelFunc, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration, limit int) (result, bool) {
	eng, ok := a.rollup.(*rollup.Engine)
	if !ok || !eng.Alone(qs) {
		return result{}, false
	}
	qry, err := eng.NewRangeQuery(ctx, a.queryable, opts, qs, start, end, step)
	if err != nil {
		return result{}, false
	}
	res := qry.Exec(rollup.NoFallback(ctx))
	if errors.Is(res.Err, rollup.ErrNotTaken) {
		qry.Close()
		return result{}, false
	}
	return a.finish(cancel, qry, res, "", limit), true
}

// execSplit runs the range query qs in parts over consecutive runs of
// its steps, concurrently, and joins their results. The queries are
// closed, and ctx canceled, only after the response is written, as exec
// does. A failed part fails the query with its error, the first part's
// if several failed.
func (a *API) execSplit(ctx context.Context, cancel context.CancelFunc, opts promql.QueryOpts, qs string, startMs, endMs, stepMs int64, parts, limit int) result {
	n := (endMs-startMs)/stepMs + 1
	qrys := make([]promql.Query, 0, parts)
	finalize := func() {
		for _, q := range qrys {
			q.Close()
		}
		cancel()
	}
	for j := range int64(parts) {
		lo, hi := j*n/int64(parts), (j+1)*n/int64(parts)-1
		// Queries asking for statistics run whole (see queryRange).
		q, err := a.rollup.NewRangeQuery(ctx, a.queryable, opts, qs, timestamp.Time(startMs+lo*stepMs), timestamp.Time(startMs+hi*stepMs), time.Duration(stepMs)*time.Millisecond)
		if err != nil {
			finalize()
			return errResult(invalidParam("query", err))
		}
		qrys = append(qrys, q)
	}
	results := make([]*promql.Result, parts)
	var wg sync.WaitGroup
	for j, q := range qrys {
		wg.Go(func() { results[j] = q.Exec(ctx) })
	}
	wg.Wait()
	var ws annotations.Annotations
	mats := make([]promql.Matrix, parts)
	for j, res := range results {
		ws.Merge(res.Warnings)
		if res.Err != nil {
			return result{err: classify(res.Err), warnings: ws, finalize: finalize}
		}
		mat, ok := res.Value.(promql.Matrix)
		if !ok {
			return result{err: classify(errors.New("range query part returned no matrix")), warnings: ws, finalize: finalize}
		}
		mats[j] = mat
	}
	res := &promql.Result{Value: joinMatrices(mats)}
	if limit > 0 && truncate(res, limit) {
		ws.Add(errTruncated)
	}
	return result{data: &queryData{value: res.Value}, warnings: ws, finalize: finalize}
}

// joinMatrices puts the results of consecutive parts of a range query end
// to end: each is sorted by labels, as the engine sorts a range query's
// result, and so is the join. A series' points are copied into slices of
// its own, so that none is shared with the pools the parts' queries give
// theirs back to on Close.
func joinMatrices(mats []promql.Matrix) promql.Matrix {
	var out promql.Matrix
	next := make([]int, len(mats)) // of each part's series, the first not joined
	holding := make([]int, 0, len(mats))
	for {
		var lset labels.Labels
		holding = holding[:0] // the parts whose next series has labels lset
		for j, m := range mats {
			if next[j] == len(m) {
				continue
			}
			switch c := labels.Compare(m[next[j]].Metric, lset); {
			case len(holding) == 0 || c < 0:
				lset, holding = m[next[j]].Metric, append(holding[:0], j)
			case c == 0:
				holding = append(holding, j)
			}
		}
		if len(holding) == 0 {
			return out
		}
		var nf, nh int
		for _, j := range holding {
			nf += len(mats[j][next[j]].Floats)
			nh += len(mats[j][next[j]].Histograms)
		}
		s := promql.Series{Metric: lset}
		if nf > 0 {
			s.Floats = make([]promql.FPoint, 0, nf)
		}
		if nh > 0 {
			s.Histograms = make([]promql.HPoint, 0, nh)
		}
		for _, j := range holding {
			p := mats[j][next[j]]
			s.Floats = append(s.Floats, p.Floats...)
			s.Histograms = append(s.Histograms, p.Histograms...)
			s.DropName = s.DropName || p.DropName
			next[j]++
		}
		out = append(out, s)
	}
}
