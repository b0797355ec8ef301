package remotewrite

import (
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// Limits protect the server from senders that send too much or too big.
// A zero field means no limit.
type Limits struct {
	// MaxLabelsPerSeries bounds the labels of one series, metric name
	// included.
	MaxLabelsPerSeries int
	// MaxLabelNameLength and MaxLabelValueLength bound label names and
	// values, in bytes.
	MaxLabelNameLength  int
	MaxLabelValueLength int
	// MaxSamplesPerSecond bounds the rate of accepted samples and
	// histograms, over all senders; a request that would exceed it gets
	// 429 and is retried by the sender later. Bursts of up to one second's
	// worth are allowed.
	MaxSamplesPerSecond float64
}

// DefaultLimits returns the limits strata runs with unless told otherwise:
// generous enough for any well-behaved sender, tight enough to stop a
// runaway label from turning into megabytes of index. The label limits are
// those Prometheus' own scrape limits and Mimir use as sensible defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxLabelsPerSeries:  40,
		MaxLabelNameLength:  1024,
		MaxLabelValueLength: 4096,
	}
}

// errLimit marks a series refused because it is over a label limit.
var errLimit = errors.New("over limit")

// checkLabel checks one label against the limits and for a non-empty
// name. UTF-8 validity is checked by the store when it creates a series: a
// label set it already has is valid, and a CPU profile of BenchmarkWrite
// showed checking every label of every request as a fifth of the time
// spent building label sets.
func (l *Limits) checkLabel(name, value string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty label name", storage.ErrInvalidLabels)
	case l.MaxLabelNameLength > 0 && len(name) > l.MaxLabelNameLength:
		return fmt.Errorf("%w: label name %.64q... is %d bytes long, the limit is %d (--remote-write.max-label-name-length)", errLimit, name, len(name), l.MaxLabelNameLength)
	case l.MaxLabelValueLength > 0 && len(value) > l.MaxLabelValueLength:
		return fmt.Errorf("%w: value of label %q is %d bytes long, the limit is %d (--remote-write.max-label-value-length)", errLimit, name, len(value), l.MaxLabelValueLength)
	}
	return nil
}

func (l *Limits) checkCount(n int) error {
	if l.MaxLabelsPerSeries > 0 && n > l.MaxLabelsPerSeries {
		return fmt.Errorf("%w: series has %d labels, the limit is %d (--remote-write.max-labels-per-series)", errLimit, n, l.MaxLabelsPerSeries)
	}
	return nil
}

// CheckSeries checks a whole label set against the limits, for receivers
// that build label sets their own way (import).
func (l *Limits) CheckSeries(lset labels.Labels) error {
	if err := l.checkCount(lset.Len()); err != nil {
		return err
	}
	var err error
	lset.Range(func(lb labels.Label) {
		if err == nil {
			err = l.checkLabel(lb.Name, lb.Value)
		}
	})
	return err
}
