package head

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/chunkenc"
)

// Samples a series may hold already: replay's samples at or before the
// newest one a checkpoint restored (see replayWorker.applyDeferred) are
// mostly in the restored chunks, as the checkpoint was written after the
// WAL segment they are in was started. Checking them one at a time, as a
// late sample is checked, decodes a chunk per sample; dropHeld checks a
// series' run of them in time order, decoding each chunk they fall in
// once.

// chunkCursor reads a chunk's samples in time order, decoding a
// histogram's buckets only where asked (sample). Its iterators and
// histograms are kept across chunks, so that it allocates only to grow
// them.
type chunkCursor struct {
	enc  chunkenc.Encoding
	xor  chunkenc.XORIterator
	dec  chunkenc.DecimalIterator
	hist chunkenc.HistogramIterator
	fh   chunkenc.FloatHistogramIterator
	// h and fhv are what sample decodes histograms into.
	h   histogram.Histogram
	fhv histogram.FloatHistogram
}

// reset points the cursor at chunk data of encoding enc, before its first
// sample.
func (c *chunkCursor) reset(data []byte, enc chunkenc.Encoding) {
	c.enc = enc
	switch enc {
	case chunkenc.EncXOR:
		c.xor.Reset(data)
	case chunkenc.EncDecimal:
		c.dec.Reset(data)
	case chunkenc.EncHistogram:
		c.hist.Reset(data)
	case chunkenc.EncFloatHistogram:
		c.fh.Reset(data)
	}
}

// next moves to the next sample, false at the end of the chunk or on an
// error (err).
func (c *chunkCursor) next() bool {
	switch c.enc {
	case chunkenc.EncXOR:
		return c.xor.Next()
	case chunkenc.EncDecimal:
		return c.dec.Next()
	case chunkenc.EncHistogram:
		return c.hist.Next()
	case chunkenc.EncFloatHistogram:
		return c.fh.Next()
	}
	return false
}

// t returns the current sample's timestamp.
func (c *chunkCursor) t() int64 {
	switch c.enc {
	case chunkenc.EncXOR:
		t, _ := c.xor.At()
		return t
	case chunkenc.EncDecimal:
		return c.dec.AtT()
	case chunkenc.EncHistogram:
		return c.hist.AtT()
	}
	return c.fh.AtT()
}

// sample returns the current sample; a histogram is the cursor's, valid
// until the next call.
func (c *chunkCursor) sample() lateSample {
	switch c.enc {
	case chunkenc.EncXOR:
		t, v := c.xor.At()
		return lateSample{t: t, v: v}
	case chunkenc.EncDecimal:
		t, v := c.dec.At()
		return lateSample{t: t, v: v}
	case chunkenc.EncHistogram:
		return lateSample{t: c.hist.AtT(), h: c.hist.AtHistogram(&c.h)}
	}
	return lateSample{t: c.fh.AtT(), fh: c.fh.AtFloatHistogram(&c.fhv)}
}

// err returns what ended the iteration early, if anything.
func (c *chunkCursor) err() error {
	switch c.enc {
	case chunkenc.EncXOR:
		return c.xor.Err()
	case chunkenc.EncDecimal:
		return c.dec.Err()
	case chunkenc.EncHistogram:
		return c.hist.Err()
	case chunkenc.EncFloatHistogram:
		return c.fh.Err()
	}
	return fmt.Errorf("unknown chunk encoding %d", c.enc)
}

// heldChecker is the memory dropHeld reuses from one series to the next.
type heldChecker struct {
	cur    chunkCursor
	chunks []headChunk
}

// dropHeld appends to kept the samples of run, sorted by time, that the
// series does not hold, and returns it with the number of samples held at
// their time with another value (conflicts): an exact duplicate is
// dropped silently, as applyFloat drops it. Every chunk a sample of run
// falls in is decoded once, up to the last such sample. mu must be held.
func (s *memSeries) dropHeld(run, kept []lateSample, hc *heldChecker) (_ []lateSample, conflicts int, err error) {
	hc.chunks = s.closedChunks(hc.chunks[:0])
	if s.hasOpenSamples() {
		hc.chunks = append(hc.chunks, newHeadChunk(s.openBytes(), s.headMint(), s.maxt, s.open))
	}
	chunks := hc.chunks
	// j is the chunk the cursor reads, open once it has been reset to it;
	// at is true while the cursor is on a sample.
	var (
		j        int
		open, at bool
	)
	for _, x := range run {
		for j < len(chunks) && chunks[j].maxt() < x.t {
			if open && hc.cur.err() != nil {
				return kept, conflicts, fmt.Errorf("decode chunk for replayed samples: %w", hc.cur.err())
			}
			j, open, at = j+1, false, false
		}
		if j == len(chunks) || x.t < chunks[j].mint {
			kept = append(kept, x)
			continue
		}
		if !open {
			hc.cur.reset(chunks[j].bytes(), chunks[j].encoding())
			open, at = true, hc.cur.next()
		}
		for at && hc.cur.t() < x.t {
			at = hc.cur.next()
		}
		if !at || hc.cur.t() != x.t {
			if err := hc.cur.err(); err != nil {
				return kept, conflicts, fmt.Errorf("decode chunk for replayed samples: %w", err)
			}
			kept = append(kept, x)
			continue
		}
		if !sameSample(hc.cur.sample(), x) {
			conflicts++
		}
	}
	return kept, conflicts, nil
}
