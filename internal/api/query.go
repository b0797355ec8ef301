package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/stats"
)

// maxPointsPerSeries bounds a range query's resolution, as Prometheus does:
// enough for a week at 60s steps or a year at 1h steps, and a guard
// against a step that would make the engine allocate without limit.
const maxPointsPerSeries = 11000

// Values of the stats parameter. Any non-empty value returns statistics;
// "all" asks for per-step statistics too (when the engine records them).
// Other values work but are deprecated in Prometheus, which warns.
const (
	statsTrue = "true"
	statsAll  = "all"
)

var errTruncated = errors.New("results truncated due to limit")

// query serves /api/v1/query: query, time, timeout, lookback_delta,
// stats, limit.
func (a *API) query(r *http.Request) result {
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(invalidParam("limit", err))
	}
	ts, err := parseTimeParam(r, "time", a.now())
	if err != nil {
		return errResult(invalidParam("time", err))
	}
	ctx, cancel, aerr := a.admit(r)
	if aerr != nil {
		return errResult(aerr)
	}
	opts, aerr := a.queryOpts(r)
	if aerr != nil {
		cancel()
		return errResult(aerr)
	}
	qry, err := a.engineFor(r).NewInstantQuery(ctx, a.queryable, opts, r.FormValue("query"), ts)
	if err != nil {
		cancel()
		return errResult(invalidParam("query", err))
	}
	return a.exec(ctx, cancel, qry, r.FormValue("stats"), limit)
}

// engineFor returns the engine that evaluates the query of r: Engine
// where r asks for statistics, which count Engine's own work, and
// otherwise Rollup.
func (a *API) engineFor(r *http.Request) promql.QueryEngine {
	if r.FormValue("stats") != "" {
		return a.engine
	}
	return a.rollup
}

// queryRange serves /api/v1/query_range: query, start, end, step,
// timeout, lookback_delta, stats, limit. The checks come in Prometheus'
// order, so that a request with several faults gets the same error.
func (a *API) queryRange(r *http.Request) result {
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(invalidParam("limit", err))
	}
	start, err := parseTime(r.FormValue("start"))
	if err != nil {
		return errResult(invalidParam("start", err))
	}
	end, err := parseTime(r.FormValue("end"))
	if err != nil {
		return errResult(invalidParam("end", err))
	}
	if end.Before(start) {
		return errResult(invalidParam("end", errors.New("end timestamp must not be before start time")))
	}
	step, err := parseDuration(r.FormValue("step"))
	if err != nil {
		return errResult(invalidParam("step", err))
	}
	if step <= 0 {
		return errResult(invalidParam("step", errors.New("zero or negative query resolution step widths are not accepted. Try a positive integer")))
	}
	if end.Sub(start)/step > maxPointsPerSeries {
		return errResult(badData(errors.New("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")))
	}
	ctx, cancel, aerr := a.admit(r)
	if aerr != nil {
		return errResult(aerr)
	}
	opts, aerr := a.queryOpts(r)
	if aerr != nil {
		cancel()
		return errResult(aerr)
	}
	// Per-step statistics are one query's: a query asking for them runs
	// whole.
	if r.FormValue("stats") == "" {
		startMs, endMs, stepMs := timestamp.FromTime(start), timestamp.FromTime(end), step.Milliseconds()
		if parts := a.splitParts(r.FormValue("query"), startMs, endMs, stepMs); parts > 1 {
			if res, ok := a.execTaken(ctx, cancel, opts, r.FormValue("query"), start, end, step, limit); ok {
				return res
			}
			return a.execSplit(ctx, cancel, opts, r.FormValue("query"), startMs, endMs, stepMs, parts, limit)
		}
	}
	qry, err := a.engineFor(r).NewRangeQuery(ctx, a.queryable, opts, r.FormValue("query"), start, end, step)
	if err != nil {
		cancel()
		return errResult(invalidParam("query", err))
	}
	return a.exec(ctx, cancel, qry, r.FormValue("stats"), limit)
}

// admit returns the context a query runs in (see queryContext) once the
// query has a slot to run in, and the function that cancels the context
// and gives the slot back.
func (a *API) admit(r *http.Request) (context.Context, context.CancelFunc, *apiError) {
	ctx, cancel, aerr := a.queryContext(r)
	if aerr != nil {
		return nil, nil, aerr
	}
	leave, aerr := a.queries.enter(ctx)
	if aerr != nil {
		cancel()
		return nil, nil, aerr
	}
	done := sync.OnceFunc(func() { cancel(); leave() })
	return ctx, done, nil
}

// queryContext is the request's context bounded by the query timeout: the
// configured one, or the `timeout` parameter if that is shorter.
func (a *API) queryContext(r *http.Request) (context.Context, context.CancelFunc, *apiError) {
	timeout := a.queryTimeout
	if s := r.FormValue("timeout"); s != "" {
		d, err := parseDuration(s)
		if err != nil {
			return nil, nil, invalidParam("timeout", err)
		}
		if timeout <= 0 || d < timeout {
			timeout = d
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		return ctx, cancel, nil
	}
	if timeout > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		return ctx, cancel, nil
	}
	return r.Context(), func() {}, nil
}

// queryOpts reads lookback_delta and whether per-step stats are wanted.
func (a *API) queryOpts(r *http.Request) (promql.QueryOpts, *apiError) {
	lookback := a.lookbackDelta
	if s := r.FormValue("lookback_delta"); s != "" {
		d, err := parseDuration(s)
		if err != nil {
			return nil, badData(fmt.Errorf("error parsing lookback delta duration: %w", err))
		}
		// Non-positive means "the default", as it does to the engine.
		if d > 0 {
			lookback = d
		}
	}
	return promql.NewPrometheusQueryOpts(r.FormValue("stats") == statsAll, lookback), nil
}

// exec runs qry and turns its outcome into a result. The query is closed,
// and ctx canceled, only after the response is written: the result's
// points live in slices the engine recycles on Close.
func (a *API) exec(ctx context.Context, cancel context.CancelFunc, qry promql.Query, statsParam string, limit int) result {
	return a.finish(cancel, qry, qry.Exec(ctx), statsParam, limit)
}

// finish turns the outcome res of qry into a result, as exec does.
func (a *API) finish(cancel context.CancelFunc, qry promql.Query, res *promql.Result, statsParam string, limit int) result {
	finalize := func() {
		qry.Close()
		cancel()
	}
	if res.Err != nil {
		return result{err: classify(res.Err), warnings: res.Warnings, finalize: finalize}
	}
	ws := res.Warnings
	if limit > 0 && truncate(res, limit) {
		ws.Add(errTruncated)
	}
	if w := statsParamWarning(statsParam); w != nil {
		ws.Add(w)
	}
	d := &queryData{value: res.Value}
	if statsParam != "" {
		d.stats = stats.NewQueryStats(qry.Stats())
	}
	return result{data: d, warnings: ws, finalize: finalize}
}

// truncate cuts a vector or matrix result to limit series and reports
// whether it did. Scalars and strings are left alone.
func truncate(res *promql.Result, limit int) bool {
	switch v := res.Value.(type) {
	case promql.Vector:
		if len(v) > limit {
			res.Value = v[:limit]
			return true
		}
	case promql.Matrix:
		if len(v) > limit {
			res.Value = v[:limit]
			return true
		}
	}
	return false
}

func statsParamWarning(s string) error {
	switch s {
	case "", statsTrue, statsAll:
		return nil
	}
	return fmt.Errorf("value %q for parameter \"stats\" is deprecated and will be rejected in the next major release, use %q or %q", s, statsTrue, statsAll)
}

// queryData is the data of a query response.
type queryData struct {
	value parser.Value
	stats stats.QueryStats // nil unless asked for
}

func (d *queryData) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"resultType":`...)
	dst = appendString(dst, string(d.value.Type()))
	dst = append(dst, `,"result":`...)
	switch v := d.value.(type) {
	case promql.Vector:
		dst = appendVector(dst, v)
	case promql.Matrix:
		dst = appendMatrix(dst, v)
	case promql.Scalar, promql.String:
		// Prometheus encodes these two with their own MarshalJSON, whose
		// timestamps are plain floats ("1.5", not "1.500"); so do we.
		b, err := json.Marshal(v)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b...)
	default:
		return dst, fmt.Errorf("unexpected result type %T", v)
	}
	if d.stats != nil {
		b, err := json.Marshal(d.stats)
		if err != nil {
			return dst, fmt.Errorf("encode stats: %w", err)
		}
		dst = append(dst, `,"stats":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// Compile-time checks that the data types implement data.
var (
	_ data = (*queryData)(nil)
	_ data = (*buildInfo)(nil)
)
