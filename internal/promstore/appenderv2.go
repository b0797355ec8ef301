package promstore

import (
	"context"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/storage"
)

// AppendableV2 gives Prometheus' scrape manager strata's appenders in the
// shape of its AppenderV2, which passes a sample's start time, exemplars
// and metadata with the sample itself. Each batch is a scrape of one
// target (see storage.WithWholeScrapes).
func AppendableV2(store storage.Appendable) promstorage.AppendableV2 { return appendableV2{store} }

type appendableV2 struct{ store storage.Appendable }

func (a appendableV2) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	// The scrape manager takes an appender for each scrape of a target.
	return &appenderV2{app: a.store.Appender(storage.WithWholeScrapes(ctx))}
}

// appenderV2 is Prometheus' storage.AppenderV2 over strata's appender.
//
// A scrape passes each sample's metadata with it, the same for every
// series of a family, and the families one after another: the metadata
// is handed to strata's appender when it differs from the last sample's,
// about once per family and scrape, and the head keeps it only when it
// changed.
type appenderV2 struct {
	app storage.Appender
	// family and meta are the metadata last handed on.
	family string
	meta   metadata.Metadata
}

func (a *appenderV2) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AppendV2Options) (promstorage.SeriesRef, error) {
	if opts.Metadata != (metadata.Metadata{}) {
		family := opts.MetricFamilyName
		if family == "" {
			family = ls.Get(labels.MetricName)
		}
		if family != "" && (family != a.family || opts.Metadata != a.meta) {
			// The family name's bytes are the scrape's buffer's. Only an
			// empty name fails SetMetadata.
			a.family, a.meta = strings.Clone(family), opts.Metadata
			_ = a.app.SetMetadata(a.family, storage.Metadata{Type: opts.Metadata.Type, Help: opts.Metadata.Help, Unit: opts.Metadata.Unit})
		}
	}
	r, err := a.app.Append(storage.SeriesRef(ref), ls, storage.Sample{ST: st, T: t, V: v, H: h, FH: fh})
	if err != nil {
		return promstorage.SeriesRef(r), promError(err)
	}
	// The sample is in; exemplar errors make a partial error, which the
	// scrape loop counts and logs.
	var partial *promstorage.AppendPartialError
	for _, e := range opts.Exemplars {
		if _, err := a.app.AppendExemplar(r, ls, e); err != nil {
			if partial == nil {
				partial = &promstorage.AppendPartialError{}
			}
			partial.ExemplarErrors = append(partial.ExemplarErrors, promError(err))
		}
	}
	return promstorage.SeriesRef(r), partial.ToError()
}

func (a *appenderV2) Commit() error   { return a.app.Commit() }
func (a *appenderV2) Rollback() error { return a.app.Rollback() }
