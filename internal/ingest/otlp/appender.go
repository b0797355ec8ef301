package otlp

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/storage"
)

// appender is what Prometheus' OTLP converter writes to (its AppenderV2),
// in front of a strata Appender. The converter stops a metric at the first
// error Append returns, so a sample the store refuses as bad data is
// recorded here and not returned: the metric's other points still go in.
// Only a server fault is returned, and it ends the request.
//
// It counts data points as the converter hands them over: one sample per
// point for gauges, sums and native histograms; a classic histogram or a
// summary point becomes several series, of which exactly one, the
// family's _count, is counted.
type appender struct {
	app storage.Appender
	rj  *ingest.Rejections
	// written counts the points stored; fault is the first server fault.
	written int
	fault   error
	// family and meta are the metadata last set, so that it is set once
	// per metric and not once per sample; set is each name and metadata
	// the request set, to its copy of the name, so that they are set
	// once per request and not once per resource that has the metric.
	// The store's appender keeps each of a batch once, so setting one
	// again in a request changes nothing.
	family string
	meta   metadata.Metadata
	set    map[familySet]string
	// infoHash and infoRun are the labels of the target_info series
	// being appended and how many samples it had in a row.
	infoHash uint64
	infoRun  int
}

// familySet is a family's name and metadata, set in a request. The
// appender keeps a copy of the name: a name's bytes may be the caller's
// only for the call.
type familySet struct {
	name string
	meta metadata.Metadata
}

// maxTargetInfoRun bounds the target_info samples of one resource in a
// request. The converter gives target_info a sample every half lookback
// delta from the resource's oldest point to its newest, so a resource
// whose points lie years apart would make millions: past a day's worth
// (at the default lookback) the resource gets no more, and the request's
// answer says so.
const maxTargetInfoRun = 600

var errTargetInfoSpan = fmt.Errorf("the resource's points span too long a time: target_info stops after %d samples", maxTargetInfoRun)

var _ promstorage.AppenderV2 = (*appender)(nil)

func (a *appender) reset(app storage.Appender, rj *ingest.Rejections) {
	set := a.set
	clear(set)
	*a = appender{app: app, rj: rj, set: set}
}

// Append stores one sample of series ls with its exemplars and metadata.
func (a *appender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	if a.fault != nil {
		return 0, a.fault
	}
	if err := a.setMetadata(opts); err != nil {
		return 0, err
	}
	return a.appendSample(ref, ls, st, t, v, h, fh, opts)
}

// appendSample is Append without the metadata, which the caller set.
func (a *appender) appendSample(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	if a.fault != nil {
		return 0, a.fault
	}
	info := opts.MetricFamilyName == targetInfo
	if info {
		if hash := ls.Hash(); hash != a.infoHash {
			a.infoHash, a.infoRun = hash, 0
		}
		if a.infoRun++; a.infoRun > maxTargetInfoRun {
			return 0, errTargetInfoSpan
		}
	}
	r, err := a.app.Append(storage.SeriesRef(ref), ls, storage.Sample{T: t, V: v, H: h, FH: fh, ST: st})
	if err != nil {
		if !ingest.IsBadData(err) {
			a.fault = err
			return 0, err
		}
		if !info {
			// target_info is made from the resource, sample by sample
			// over the span of its points: one older than what the
			// series has (from a request that went before) is no
			// problem of the sender's.
			a.rj.Add(0, fmt.Errorf("series %s: %w", ls, err))
		}
		return 0, nil
	}
	if isPoint(ls, h != nil || fh != nil, opts) {
		a.written++
	}
	for _, e := range opts.Exemplars {
		if _, err := a.app.AppendExemplar(r, ls, e); err != nil {
			if !ingest.IsBadData(err) {
				a.fault = err
				return 0, err
			}
			a.rj.Add(0, fmt.Errorf("exemplar of series %s: %w", ls, err))
		}
	}
	return promstorage.SeriesRef(r), nil
}

// setMetadata records the metric's type, unit and help when they differ
// from what the previous sample carried.
func (a *appender) setMetadata(opts promstorage.AOptions) error {
	name := opts.MetricFamilyName
	if name == "" || (name == a.family && opts.Metadata == a.meta) {
		return nil
	}
	if kept, ok := a.set[familySet{name, opts.Metadata}]; ok {
		a.family, a.meta = kept, opts.Metadata
		return nil
	}
	err := a.app.SetMetadata(name, storage.Metadata{Type: opts.Metadata.Type, Help: opts.Metadata.Help, Unit: opts.Metadata.Unit})
	if err != nil {
		a.fault = err
		return err
	}
	if a.set == nil {
		a.set = map[familySet]string{}
	}
	name = strings.Clone(name)
	a.family, a.meta, a.set[familySet{name, opts.Metadata}] = name, opts.Metadata, name
	return nil
}

// isPoint reports whether a sample is the one counted for its data point
// (see appender).
func isPoint(ls labels.Labels, hist bool, opts promstorage.AOptions) bool {
	switch {
	case hist:
		return true
	case opts.MetricFamilyName == targetInfo:
		// Made from the resource, not from a point.
		return false
	case opts.Metadata.Type == model.MetricTypeHistogram || opts.Metadata.Type == model.MetricTypeSummary:
		name := ls.Get(model.MetricNameLabel)
		return len(name) == len(opts.MetricFamilyName)+len("_count") && name[len(opts.MetricFamilyName):] == "_count"
	}
	return true
}

// targetInfo is the series the converter makes of a resource's
// attributes.
const targetInfo = "target_info"

// Commit and Rollback are the handler's to call on the strata appender.
func (a *appender) Commit() error   { return nil }
func (a *appender) Rollback() error { return nil }
