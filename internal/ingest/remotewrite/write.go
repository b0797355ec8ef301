package remotewrite

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/strata-db/strata/internal/storage"
)

// maxReportedErrors bounds how many rejections a 400 body lists; the rest
// are counted. A sender logs the body, and one broken series repeated a
// thousand times helps nobody.
const maxReportedErrors = 10

// rejections collects why samples of a request were refused.
type rejections struct {
	samples int
	msgs    []string
}

func (rj *rejections) add(n int, err error) {
	rj.samples += n
	if len(rj.msgs) < maxReportedErrors {
		rj.msgs = append(rj.msgs, err.Error())
	}
}

func (rj *rejections) String(total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d samples rejected", rj.samples, total)
	for _, m := range rj.msgs {
		b.WriteString("\n")
		b.WriteString(m)
	}
	if rj.samples > len(rj.msgs) {
		fmt.Fprintf(&b, "\n(%d more not listed)", rj.samples-len(rj.msgs))
	}
	return b.String()
}

// isBadData reports whether err means the sample itself is invalid, so that
// a retry cannot help.
func isBadData(err error) bool {
	return errors.Is(err, storage.ErrOutOfOrderSample) ||
		errors.Is(err, storage.ErrDuplicateSampleForTimestamp) ||
		errors.Is(err, storage.ErrInvalidLabels)
}

// write appends the request's samples and returns the response status and
// body. Invalid series and samples are skipped and reported; the rest is
// committed.
func (h *Handler) write(r *http.Request, req *prompb.WriteRequest, b *labels.ScratchBuilder) (int, string) {
	app := h.app.Appender(r.Context())
	var (
		rj    rejections
		total int
	)
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		total += len(ts.Samples) + len(ts.Histograms)
		if len(ts.Histograms) > 0 {
			rj.add(len(ts.Histograms), errors.New("native histograms are not supported by this server yet"))
		}
		if len(ts.Samples) == 0 {
			continue
		}
		lset, err := toLabels(b, ts.Labels)
		if err != nil {
			rj.add(len(ts.Samples), err)
			continue
		}
		var ref storage.SeriesRef
		for _, s := range ts.Samples {
			ref, err = app.Append(ref, lset, storage.Sample{T: s.Timestamp, V: s.Value})
			if err == nil {
				continue
			}
			if !isBadData(err) {
				_ = app.Rollback()
				return serverError(err)
			}
			rj.add(1, err)
			if errors.Is(err, storage.ErrInvalidLabels) {
				// The whole series is invalid: count its samples once.
				rj.samples += len(ts.Samples) - 1
				break
			}
		}
	}
	if err := app.Commit(); err != nil {
		return serverError(err)
	}
	if rj.samples > 0 {
		h.logger.Debug("remote-write samples rejected", "rejected", rj.samples, "total", total, "first", rj.msgs[0])
		return http.StatusBadRequest, rj.String(total)
	}
	return http.StatusNoContent, ""
}

// serverError maps a store failure to a status the sender retries.
func serverError(err error) (int, string) {
	if errors.Is(err, storage.ErrNotReady) {
		return http.StatusServiceUnavailable, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// toLabels builds the sorted label set of a series. Labels with an empty
// value are dropped: in Prometheus' data model they are the same as no
// label. A missing metric name or an empty label name is an error; the
// store checks the rest when it creates the series.
func toLabels(b *labels.ScratchBuilder, pls []prompb.Label) (labels.Labels, error) {
	b.Reset()
	hasName := false
	for _, l := range pls {
		if l.Name == "" {
			return labels.EmptyLabels(), fmt.Errorf("%w: empty label name in %s", storage.ErrInvalidLabels, labelsString(pls))
		}
		if l.Value == "" {
			continue
		}
		if l.Name == labels.MetricName {
			hasName = true
		}
		b.Add(l.Name, l.Value)
	}
	if !hasName {
		return labels.EmptyLabels(), fmt.Errorf("%w: series %s has no metric name", storage.ErrInvalidLabels, labelsString(pls))
	}
	b.Sort()
	return b.Labels(), nil
}

// labelsString renders labels as sent, for error messages about label sets
// that cannot be made into labels.Labels.
func labelsString(pls []prompb.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range pls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}
