package chunkenc

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
)

// CounterResetHeader is a histogram chunk's counter-reset state, stored in
// the chunk's header byte. It says how the chunk's first histogram relates
// to the one before it, in the previous chunk of the series; within a
// chunk, counter histograms never reset (Append refuses a reset).
type CounterResetHeader uint8

// The values are those of histogram.CounterResetHint with the same names,
// and are what the header byte holds (see docs/format/chunks.md).
const (
	UnknownCounterReset CounterResetHeader = iota // reset state unknown: queries compare with the previous chunk
	CounterReset                                  // the chunk's first histogram follows a counter reset
	NotCounterReset                               // it does not
	GaugeType                                     // the chunk holds gauge histograms
)

func (h CounterResetHeader) String() string {
	switch h {
	case UnknownCounterReset:
		return "UnknownCounterReset"
	case CounterReset:
		return "CounterReset"
	case NotCounterReset:
		return "NotCounterReset"
	case GaugeType:
		return "GaugeType"
	}
	return fmt.Sprintf("CounterResetHeader(%d)", uint8(h))
}

// headerFromHint returns the header for a chunk whose first histogram has
// the hint h. Hints outside the four known ones count as unknown.
func headerFromHint(h histogram.CounterResetHint) CounterResetHeader {
	switch h {
	case histogram.CounterReset:
		return CounterReset
	case histogram.NotCounterReset:
		return NotCounterReset
	case histogram.GaugeType:
		return GaugeType
	}
	return UnknownCounterReset
}

// hint returns the histogram hint a header gives the chunk's first
// histogram.
func (h CounterResetHeader) hint() histogram.CounterResetHint {
	switch h {
	case CounterReset:
		return histogram.CounterReset
	case NotCounterReset:
		return histogram.NotCounterReset
	case GaugeType:
		return histogram.GaugeType
	}
	return histogram.UnknownCounterReset
}

// AppendResult says what Append did.
type AppendResult uint8

const (
	// Appended: the histogram is in the chunk.
	Appended AppendResult = iota
	// NeedNewChunk: the histogram cannot join this chunk. Its schema, zero
	// threshold or custom bucket bounds differ from the chunk's, it is a
	// gauge histogram and the chunk holds counters or the other way round,
	// its buckets and the chunk's are too far apart for one span list, or
	// the chunk holds math.MaxUint16 samples. The chunk is unchanged; the
	// caller closes it and appends the histogram to a new chunk.
	NeedNewChunk
	// CounterResetDetected: the histogram is a counter reset against the
	// chunk's previous one. The chunk is unchanged; the caller closes it and
	// appends the histogram, its hint set to histogram.CounterReset, to a
	// new chunk, whose header then says CounterReset.
	CounterResetDetected
)

func (r AppendResult) String() string {
	switch r {
	case Appended:
		return "Appended"
	case NeedNewChunk:
		return "NeedNewChunk"
	case CounterResetDetected:
		return "CounterResetDetected"
	}
	return fmt.Sprintf("AppendResult(%d)", uint8(r))
}
