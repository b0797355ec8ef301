package api

import (
	"errors"
	"net/http"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql/parser"
)

// queryExemplars serves /api/v1/query_exemplars: query, start, end. As in
// Prometheus, the query is parsed only for its selectors; the exemplars of
// the series any of them selects, in [start, end], are returned.
func (a *API) queryExemplars(r *http.Request) result {
	start, err := parseTimeParam(r, "start", minTime)
	if err != nil {
		return errResult(invalidParam("start", err))
	}
	end, err := parseTimeParam(r, "end", maxTime)
	if err != nil {
		return errResult(invalidParam("end", err))
	}
	if end.Before(start) {
		return errResult(badData(errors.New("end timestamp must not be before start timestamp")))
	}
	expr, err := a.parser.ParseExpr(r.FormValue("query"))
	if err != nil {
		return errResult(badData(err))
	}
	selectors := parser.ExtractSelectors(expr)
	if len(selectors) == 0 || a.exemplars == nil {
		return result{data: &exemplarData{null: len(selectors) == 0}}
	}
	eq, err := a.exemplars.ExemplarQuerier(r.Context())
	if err != nil {
		return errResult(classify(err))
	}
	res, err := eq.Select(timestamp.FromTime(start), timestamp.FromTime(end), selectors...)
	if err != nil {
		return errResult(classify(err))
	}
	return result{data: &exemplarData{res: res}}
}

// exemplarData is the data of /api/v1/query_exemplars, in Prometheus'
// shape: a list of {seriesLabels, exemplars: [{labels, value, timestamp}]},
// or null for a query without selectors.
type exemplarData struct {
	res  []exemplar.QueryResult
	null bool
}

func (d *exemplarData) appendJSON(dst []byte) ([]byte, error) {
	if d.null {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, qr := range d.res {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"seriesLabels":`...)
		dst = appendLabels(dst, qr.SeriesLabels)
		dst = append(dst, `,"exemplars":[`...)
		for j, e := range qr.Exemplars {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"labels":`...)
			dst = appendLabels(dst, e.Labels)
			dst = append(dst, `,"value":`...)
			dst = appendFloat(dst, e.Value)
			dst = append(dst, `,"timestamp":`...)
			dst = appendTimestamp(dst, e.Ts)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']'), nil
}
