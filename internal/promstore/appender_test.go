package promstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/storage"
)

// recordingAppender keeps what it is given and fails as told.
type recordingAppender struct {
	samples []storage.Sample
	err     error
}

func (r *recordingAppender) Appender(context.Context) storage.Appender { return r }

func (r *recordingAppender) Append(_ storage.SeriesRef, _ labels.Labels, s storage.Sample) (storage.SeriesRef, error) {
	if r.err != nil {
		return 0, r.err
	}
	r.samples = append(r.samples, s)
	return 1, nil
}

func (r *recordingAppender) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 1, r.err
}
func (r *recordingAppender) SetMetadata(string, storage.Metadata) error { return r.err }
func (r *recordingAppender) Commit() error                              { return nil }
func (r *recordingAppender) Rollback() error                            { return nil }

// TestAppenderErrors: strata's sentinel errors reach the rule manager as
// Prometheus' of the same meaning, which it tells apart the way
// rules/group.go does (errors.Unwrap, then errors.Is), keeping strata's
// message.
func TestAppenderErrors(t *testing.T) {
	for _, p := range promErrors {
		rec := &recordingAppender{err: fmt.Errorf("%w: series x, timestamp 5", p.strata)}
		app := Appendable(rec).Appender(context.Background())
		_, err := app.Append(0, labels.FromStrings("__name__", "x"), 5, 1)
		unwrapped := errors.Unwrap(err)
		if unwrapped == nil {
			unwrapped = err
		}
		if !errors.Is(unwrapped, p.prom) || !errors.Is(err, p.strata) {
			t.Errorf("%v: not seen as %v", err, p.prom)
		}
		if err.Error() != rec.err.Error() {
			t.Errorf("message %q, want %q", err, rec.err)
		}
	}
	rec := &recordingAppender{err: storage.ErrNotReady}
	_, err := Appendable(rec).Appender(context.Background()).Append(0, labels.FromStrings("__name__", "x"), 5, 1)
	if !errors.Is(err, storage.ErrNotReady) || errors.Is(err, promstorage.ErrOutOfOrderSample) {
		t.Errorf("an error without a Prometheus sentinel: %v", err)
	}
}

// TestAppenderStartTime: a start time given by AppendSTZeroSample is
// stored with the next sample of its series, and only of its series.
func TestAppenderStartTime(t *testing.T) {
	rec := &recordingAppender{}
	app := Appendable(rec).Appender(context.Background())
	x, y := labels.FromStrings("__name__", "x"), labels.FromStrings("__name__", "y")
	if _, err := app.AppendSTZeroSample(0, x, 10, 3); err != nil {
		t.Fatal(err)
	}
	for _, l := range []labels.Labels{x, x} {
		if _, err := app.Append(0, l, 10, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.AppendSTZeroSample(0, x, 20, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(0, y, 20, 1); err != nil {
		t.Fatal(err)
	}
	got := []int64{rec.samples[0].ST, rec.samples[1].ST, rec.samples[2].ST}
	if fmt.Sprint(got) != "[3 0 0]" {
		t.Errorf("start times %v, want [3 0 0]", got)
	}
}
