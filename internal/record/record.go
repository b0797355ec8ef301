// Package record encodes and decodes the records strata writes to its
// write-ahead log. The WAL itself (package wal) stores opaque byte slices;
// this package gives them meaning.
//
// Every record starts with one byte, its Type. Encoders append to a
// caller's buffer and return it; a Decoder turns records back into values,
// reusing the caller's slices. The byte layout of each type is described in
// docs/format/wal.md.
package record

import (
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// Type is the first byte of every record and says how to decode the rest.
// Values are part of the on-disk format: never renumber them. A changed
// layout gets a new Type so that old logs stay readable.
type Type uint8

const (
	// Unknown is what Kind returns for an empty record or an unknown type
	// byte. No record is written with it.
	Unknown Type = 0
	// Series records introduce series: a ref and its labels.
	Series Type = 1
	// Samples records hold float samples of series introduced earlier.
	Samples Type = 2
	// ChunkSeries records make up a checkpoint: series with their ref,
	// labels and compressed chunks.
	ChunkSeries Type = 3
	// Metadata records hold the type, help and unit of metric families.
	Metadata Type = 4
	// Exemplars records hold exemplars of series introduced earlier.
	Exemplars Type = 5
	// HistogramSamples records hold integer native histogram samples of
	// series introduced earlier.
	HistogramSamples Type = 6
	// FloatHistogramSamples records hold float native histogram samples of
	// series introduced earlier.
	FloatHistogramSamples Type = 7
	// StartTimes records hold changes of series' start (created) times.
	StartTimes Type = 8
	// Compressed records hold another record compressed with zstd: a
	// checkpoint's ChunkSeries records, whose series repeat each
	// other's label names and values.
	Compressed Type = 9
	// Tombstones records hold time ranges deleted from series.
	Tombstones Type = 10
)

func (t Type) String() string {
	switch t {
	case Series:
		return "series"
	case Samples:
		return "samples"
	case ChunkSeries:
		return "chunk series"
	case Metadata:
		return "metadata"
	case Exemplars:
		return "exemplars"
	case HistogramSamples:
		return "histogram samples"
	case StartTimes:
		return "start times"
	case FloatHistogramSamples:
		return "float histogram samples"
	case Compressed:
		return "compressed"
	case Tombstones:
		return "tombstones"
	default:
		return fmt.Sprintf("unknown(%d)", uint8(t))
	}
}

// Kind returns the type of rec, or Unknown if rec is empty or its type byte
// is not one this package knows.
func Kind(rec []byte) Type {
	if len(rec) == 0 {
		return Unknown
	}
	switch t := Type(rec[0]); t {
	case Series, Samples, ChunkSeries, Metadata, Exemplars, HistogramSamples, FloatHistogramSamples, StartTimes, Compressed, Tombstones:
		return t
	}
	return Unknown
}

// ErrCorrupt is wrapped by every error a Decoder returns: the record is not
// a well-formed record of the requested type.
var ErrCorrupt = errors.New("corrupt WAL record")

// RefSeries is a series and the ref the head assigned to it.
type RefSeries struct {
	Ref    storage.SeriesRef
	Labels labels.Labels
}

// RefSample is one float sample of the series with the given ref.
type RefSample struct {
	Ref storage.SeriesRef
	T   int64 // milliseconds since the epoch
	V   float64
}
