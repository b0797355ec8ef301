package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// API queries a Prometheus HTTP API v1. It is safe for concurrent use.
type API struct {
	base string
	http *http.Client
}

// NewAPI returns a client of the API under base (http://host:port).
func NewAPI(base string, hc *http.Client) *API {
	return &API{base: base, http: hc}
}

// QueryResult is what the harness needs from a query response.
type QueryResult struct {
	Status     int
	ResultType string
	// Series is the number of series (or 1 for a scalar).
	Series int
	// Value is the value of the first element of a vector or scalar
	// result, NaN if there is none.
	Value float64
	// Points is the number of samples of a matrix.
	Points  int
	Latency time.Duration
}

// Query runs an instant query at t.
func (a *API) Query(ctx context.Context, q string, t time.Time) (QueryResult, error) {
	v := url.Values{"query": {q}, "time": {formatTime(t)}}
	return a.get(ctx, "/api/v1/query", v)
}

// QueryValues runs an instant query at t whose result is a matrix (a
// range selector) and returns the values of all its samples.
func (a *API) QueryValues(ctx context.Context, q string, t time.Time) ([]float64, error) {
	v := url.Values{"query": {q}, "time": {formatTime(t)}}
	var vals []float64
	_, err := a.getRaw(ctx, "/api/v1/query", v, func(res *QueryResult, raw json.RawMessage) error {
		if res.ResultType != "matrix" {
			return fmt.Errorf("result type %q, want matrix", res.ResultType)
		}
		var m []struct {
			Values [][2]json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		for _, s := range m {
			for _, p := range s.Values {
				vals = append(vals, parseValue(p[1]))
			}
		}
		return nil
	})
	return vals, err
}

// QueryRange runs a range query.
func (a *API) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (QueryResult, error) {
	v := url.Values{
		"query": {q},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	return a.get(ctx, "/api/v1/query_range", v)
}

// formatTime gives t in seconds with millisecond precision, which every
// Prometheus-compatible API accepts.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// response is the envelope of every API v1 answer.
type response struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// APIError is an answer other than success.
type APIError struct {
	Status int
	Type   string
	Msg    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s: %s", e.Status, e.Type, e.Msg)
}

func (a *API) get(ctx context.Context, path string, v url.Values) (QueryResult, error) {
	return a.getRaw(ctx, path, v, parseResult)
}

// getRaw runs the request and hands the result to parse.
func (a *API) getRaw(ctx context.Context, path string, v url.Values, parse func(*QueryResult, json.RawMessage) error) (QueryResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+v.Encode(), nil)
	if err != nil {
		return QueryResult{}, err
	}
	req.Header.Set("User-Agent", "strata-bench")
	start := time.Now()
	resp, err := a.http.Do(req)
	if err != nil {
		return QueryResult{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	res := QueryResult{Status: resp.StatusCode, Latency: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("read response: %w", err)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return res, &APIError{Status: resp.StatusCode, Type: "bad_response", Msg: truncate(string(body))}
	}
	if resp.StatusCode != http.StatusOK || r.Status != "success" {
		return res, &APIError{Status: resp.StatusCode, Type: r.ErrorType, Msg: truncate(r.Error)}
	}
	res.ResultType = r.Data.ResultType
	if err := parse(&res, r.Data.Result); err != nil {
		return res, fmt.Errorf("parse %s result: %w", res.ResultType, err)
	}
	return res, nil
}

func truncate(s string) string {
	if len(s) > maxErrorBody {
		return s[:maxErrorBody] + "..."
	}
	return s
}

// parseResult fills in Series, Value and Points.
func parseResult(res *QueryResult, raw json.RawMessage) error {
	res.Value = nan()
	switch res.ResultType {
	case "scalar", "string":
		var p [2]json.RawMessage
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		res.Series = 1
		res.Value = parseValue(p[1])
	case "vector":
		var v []struct {
			Value [2]json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		res.Series = len(v)
		if len(v) > 0 {
			res.Value = parseValue(v[0].Value[1])
		}
	case "matrix":
		var m []struct {
			Values []json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		res.Series = len(m)
		for _, s := range m {
			res.Points += len(s.Values)
		}
	default:
		return fmt.Errorf("unknown result type %q", res.ResultType)
	}
	return nil
}

// parseValue reads a sample value, which the API sends as a JSON string.
func parseValue(raw json.RawMessage) float64 {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nan()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nan()
	}
	return f
}
