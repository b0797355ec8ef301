package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// checkContextEvery is how many series the series endpoint reads between
// looks at its context: often enough to stop soon after a client goes,
// rarely enough that the check costs nothing next to reading a series.
const checkContextEvery = 128

// timeRange reads the optional start and end of a metadata request;
// absent, they are the widest range there is.
func timeRange(r *http.Request) (mint, maxt int64, err *apiError) {
	start, e := parseTimeParam(r, "start", minTime)
	if e != nil {
		return 0, 0, invalidParam("start", e)
	}
	end, e := parseTimeParam(r, "end", maxTime)
	if e != nil {
		return 0, 0, invalidParam("end", e)
	}
	return timestamp.FromTime(start), timestamp.FromTime(end), nil
}

// series serves /api/v1/series: match[] (required, repeatable), start,
// end, limit. The answer is the union of the series each match[] selects,
// sorted by labels.
func (a *API) series(r *http.Request) result {
	if len(r.Form["match[]"]) == 0 {
		return errResult(badData(errors.New("no match[] parameter provided")))
	}
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(invalidParam("limit", err))
	}
	mint, maxt, aerr := timeRange(r)
	if aerr != nil {
		return errResult(aerr)
	}
	sets, err := parseMatchers(a.parser, r.Form["match[]"])
	if err != nil {
		return errResult(invalidParam("match[]", err))
	}
	ctx := r.Context()
	q, err := a.queryable.Querier(mint, maxt)
	if err != nil {
		return errResult(classify(err))
	}
	closeQuerier := func() { q.Close() }

	hints := &storage.SelectHints{
		Start: mint,
		End:   maxt,
		// No PromQL function is named "series"; Prometheus' storages read
		// it as "labels only, no samples".
		Func:  "series",
		Limit: hintLimit(limit),
	}
	set := selectUnion(ctx, q, hints, sets)

	out := labelSets{}
	for n := 1; set.Next(); n++ {
		if n%checkContextEvery == 0 {
			if err := ctx.Err(); err != nil {
				return result{err: classify(err), warnings: set.Warnings(), finalize: closeQuerier}
			}
		}
		out = append(out, set.At().Labels())
		if limit > 0 && len(out) > limit {
			ws := set.Warnings()
			ws.Add(errTruncated)
			return result{data: out[:limit], warnings: ws, finalize: closeQuerier}
		}
	}
	if err := set.Err(); err != nil {
		return result{err: classify(err), warnings: set.Warnings(), finalize: closeQuerier}
	}
	return result{data: out, warnings: set.Warnings(), finalize: closeQuerier}
}

// labelNames serves /api/v1/labels: match[] (optional, repeatable),
// start, end, limit.
func (a *API) labelNames(r *http.Request) result {
	return a.labelQuery(r, func(ctx context.Context, q storage.Querier, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelNames(ctx, hints, ms...)
	})
}

// labelValues serves /api/v1/label/{name}/values: match[] (optional,
// repeatable), start, end, limit. A name that is not valid UTF-8 may be
// sent escaped as "U__" followed by its value-encoded form.
func (a *API) labelValues(r *http.Request) result {
	name := r.PathValue("name")
	if strings.HasPrefix(name, "U__") {
		name = model.UnescapeName(name, model.ValueEncodingEscaping)
	}
	if !model.UTF8Validation.IsValidLabelName(name) {
		return errResult(badData(fmt.Errorf("invalid label name: %q", name)))
	}
	return a.labelQuery(r, func(ctx context.Context, q storage.Querier, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelValues(ctx, name, hints, ms...)
	})
}

// labelQuery runs a label names or values lookup once per match[] (or
// once without matchers) and answers the sorted union, cut to limit.
func (a *API) labelQuery(r *http.Request, lookup func(context.Context, storage.Querier, *storage.LabelHints, []*labels.Matcher) ([]string, annotations.Annotations, error)) result {
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(invalidParam("limit", err))
	}
	mint, maxt, aerr := timeRange(r)
	if aerr != nil {
		return errResult(aerr)
	}
	sets, err := parseMatchers(a.parser, r.Form["match[]"])
	if err != nil {
		return errResult(badData(err))
	}
	q, err := a.queryable.Querier(mint, maxt)
	if err != nil {
		return errResult(classify(err))
	}
	// The strings a querier returns are valid only until it is closed.
	closeQuerier := func() { q.Close() }

	ctx := r.Context()
	hints := &storage.LabelHints{Limit: hintLimit(limit)}
	var (
		out stringList
		ws  annotations.Annotations
	)
	if len(sets) <= 1 {
		var ms []*labels.Matcher
		if len(sets) == 1 {
			ms = sets[0]
		}
		out, ws, err = lookup(ctx, q, hints, ms)
		if err != nil {
			return result{err: classify(err), warnings: ws, finalize: closeQuerier}
		}
		// Queriers promise sorted answers; checking is cheaper than
		// trusting every future one. The slice is the querier's: sort a
		// copy.
		if !slices.IsSorted(out) {
			out = slices.Clone(out)
			slices.Sort(out)
		}
	} else {
		// Concatenate, sort, drop repeats: fewer allocations than a set,
		// and the answers are short.
		for _, ms := range sets {
			vals, callWs, err := lookup(ctx, q, hints, ms)
			ws.Merge(callWs)
			if err != nil {
				return result{err: classify(err), warnings: ws, finalize: closeQuerier}
			}
			out = append(out, vals...)
		}
		slices.Sort(out)
		out = slices.Compact(out)
	}
	if out == nil {
		out = stringList{}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
		ws.Add(errTruncated)
	}
	return result{data: out, warnings: ws, finalize: closeQuerier}
}

// labelSets is the data of a series response.
type labelSets []labels.Labels

func (ls labelSets) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '[')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendLabels(dst, l)
	}
	return append(dst, ']'), nil
}

// stringList is the data of a label names or values response; nil is [].
type stringList []string

func (s stringList) appendJSON(dst []byte) ([]byte, error) {
	return appendStrings(dst, s), nil
}

// selectUnion selects, sorted, the union of the series each matcher set
// selects.
func selectUnion(ctx context.Context, q storage.Querier, hints *storage.SelectHints, sets [][]*labels.Matcher) storage.SeriesSet {
	if len(sets) == 1 {
		return q.Select(ctx, true, hints, sets[0]...)
	}
	selected := make([]storage.SeriesSet, 0, len(sets))
	for _, ms := range sets {
		selected = append(selected, q.Select(ctx, true, hints, ms...))
	}
	return storage.NewMergeSeriesSet(selected, 0, storage.ChainedSeriesMerge)
}
