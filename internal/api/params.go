package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Bounds used when a request leaves start or end of a metadata query out.
// They are Prometheus' (narrower than the int64 millisecond range, so that
// they survive a round trip through RFC 3339), because clients send back
// the formatted values and expect them to parse.
var (
	minTime = time.Unix(math.MinInt64/1000+62135596801, 0).UTC()
	maxTime = time.Unix(math.MaxInt64/1000-62135596801, 999999999).UTC()

	minTimeText = minTime.Format(time.RFC3339Nano)
	maxTimeText = maxTime.Format(time.RFC3339Nano)
)

// parseTime reads a timestamp as Unix seconds (with a fraction, rounded to
// the millisecond) or as RFC 3339. The year-out-of-range RFC 3339 forms of
// minTime and maxTime are accepted too: Go's parser wants 4-digit years.
func parseTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		ms := math.Round(frac * 1000)
		return time.Unix(int64(sec), int64(ms)*int64(time.Millisecond)).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	switch s {
	case minTimeText:
		return minTime, nil
	case maxTimeText:
		return maxTime, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

// parseTimeParam reads the optional time parameter name, def if absent.
func parseTimeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	t, err := parseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time value for '%s': %w", name, err)
	}
	return t, nil
}

// parseDuration reads a duration as float seconds or as a Prometheus
// duration string ("1m30s", "1d").
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
		ns := f * float64(time.Second)
		if ns >= math.MaxInt64 || ns <= math.MinInt64 {
			return 0, fmt.Errorf("cannot parse %q to a valid duration. It overflows int64", s)
		}
		return time.Duration(ns), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

// parseLimit reads the limit parameter; 0 (also when absent) means none.
func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errors.New("limit must be non-negative")
	}
	return n, nil
}

// parseMetadataLimit reads the limit of the metadata endpoints, which
// Prometheus takes as any number: a negative one, and the absent one,
// means none.
func parseMetadataLimit(s string) (int, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errors.New("limit must be a number")
	}
	return n, nil
}

// hintLimit is the limit passed down to a querier: one more than the
// caller's, so that a full answer tells us the result was truncated.
func hintLimit(limit int) int {
	if limit > 0 && limit < math.MaxInt {
		return limit + 1
	}
	return limit
}

// parseMatchers parses match[] selectors. Each must have a matcher that
// rejects the empty value, or it would select every series there is.
func parseMatchers(p parser.Parser, selectors []string) ([][]*labels.Matcher, error) {
	sets, err := p.ParseMetricSelectors(selectors)
	if err != nil {
		return nil, err
	}
	for _, set := range sets {
		if !hasNonEmptyMatcher(set) {
			return nil, errors.New("match[] must contain at least one non-empty matcher")
		}
	}
	return sets, nil
}

func hasNonEmptyMatcher(set []*labels.Matcher) bool {
	for _, m := range set {
		if m != nil && !m.Matches("") {
			return true
		}
	}
	return false
}

func invalidParam(name string, err error) *apiError {
	return badData(fmt.Errorf("invalid parameter %q: %w", name, err))
}
