package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/backfill"
	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/ingest/importer"
)

type backfillOptions struct {
	format, input, output, blockDuration string
}

// The formats create-blocks-from reads.
const (
	formatOpenMetrics = "openmetrics"
	formatJSONLines   = "jsonl"
)

// tsdbCreateBlocks writes the samples of an input file into blocks in
// the output directory, as `promtool tsdb create-blocks-from` does.
func tsdbCreateBlocks(ctx context.Context, o backfillOptions, logger *slog.Logger, out io.Writer) error {
	d, err := model.ParseDuration(o.blockDuration)
	if err != nil || d <= 0 {
		return fmt.Errorf("--max-block-duration %q is not a positive duration", o.blockDuration)
	}
	opts := backfill.DefaultOptions()
	opts.BlockDuration = time.Duration(d).Milliseconds()
	var src backfill.Source
	switch o.format {
	case formatOpenMetrics:
		b, unmap, err := block.MapFile(o.input)
		if err != nil {
			return err
		}
		defer unmap()
		if len(b) == 0 {
			return fmt.Errorf("%s is empty", o.input)
		}
		src = func(add func(labels.Labels, []int64, []float64) error) error {
			return importer.ReadOpenMetrics(b, add)
		}
	case formatJSONLines:
		src = func(add func(labels.Labels, []int64, []float64) error) error {
			f, err := os.Open(o.input)
			if err != nil {
				return err
			}
			defer f.Close()
			var r io.Reader = f
			if strings.HasSuffix(o.input, ".gz") {
				zr, err := gzip.NewReader(f)
				if err != nil {
					return fmt.Errorf("%s: %w", o.input, err)
				}
				defer zr.Close()
				r = zr
			}
			return importer.ReadJSONLines(r, importer.DefaultOptions().MaxLineBytes, add)
		}
	}
	if err := os.MkdirAll(o.output, 0o777); err != nil {
		return err
	}
	start := time.Now()
	metas, err := backfill.Write(ctx, src, o.output, opts, logger)
	for _, m := range metas {
		fmt.Fprintf(out, "block %s: %s to %s, %d series, %d samples\n", m.ULID, fmtTime(m.MinTime, true), fmtTime(m.MaxTime, true), m.Stats.Series, m.Stats.Samples)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.input, err)
	}
	fmt.Fprintf(out, "%d blocks written to %s in %s\n",
		len(metas), o.output, time.Since(start).Round(time.Millisecond))
	return nil
}
