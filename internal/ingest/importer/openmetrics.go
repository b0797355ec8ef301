package importer

import (
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// ReadOpenMetrics reads an OpenMetrics text exposition, as
// `promtool tsdb create-blocks-from openmetrics` takes it: every sample
// with its timestamp (in seconds, as OpenMetrics writes them), the text
// ending with "# EOF". It passes each sample to add, with timestamps in
// milliseconds, in slices add may not keep; a sample without a
// timestamp, text that does not parse, or an error of add's ends it.
func ReadOpenMetrics(b []byte, add func(lset labels.Labels, ts []int64, vs []float64) error) error {
	p := textparse.NewOpenMetricsParser(b, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
	var (
		lset labels.Labels
		t    [1]int64
		v    [1]float64
	)
	for {
		e, err := p.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("parse OpenMetrics: %w", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, val := p.Series()
		p.Labels(&lset)
		if ts == nil {
			return fmt.Errorf("series %s has no timestamp: every sample of a backfill needs one", lset)
		}
		t[0], v[0] = *ts, val
		if err := add(lset, t[:], v[:]); err != nil {
			return err
		}
	}
}
