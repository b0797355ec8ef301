package head

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// Late samples: those older than their series' newest sample.
//
// Append takes one if it is within Options.OutOfOrderWindow of the head's
// newest sample (acceptsLate). Commit logs it like any other sample and
// insert puts it where it belongs: the chunk whose time it falls in, or
// the nearest one if it falls between chunks, is decoded, the sample
// added, and the samples encoded again into chunks cut by the rules that
// cut appended ones. A series' chunks therefore stay sorted and disjoint,
// so queries, checkpoints and blocks read them as they read any others:
// a late sample pays for itself, once, and in-order appends pay nothing.
// A closed chunk encoded again leaves its old bytes to readers that may
// hold them; retireChunks frees them once those are done.

// lateSample is a sample of any kind, as insert decodes a chunk into:
// h or fh set for a histogram, v for a float.
type lateSample struct {
	t  int64
	v  float64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

// acceptsLate reports whether a sample at t, older than its series'
// newest or than the head's floor, is within the out-of-order window of
// the newest sample: the head's, or the blocks' if the head is empty.
func (h *Head) acceptsLate(t int64) bool {
	w := h.opts.OutOfOrderWindow
	if w <= 0 {
		return false
	}
	maxt := h.maxt.Load()
	if floor := h.appendFloor.Load(); floor != math.MinInt64 {
		maxt = max(maxt, floor-1)
	}
	return maxt < math.MinInt64+w || t >= maxt-w
}

// insert adds a sample older than the series' newest one (t < s.maxt),
// re-encoding the chunk it goes into, and reports whether it did: a
// sample the series has at t already is an exact duplicate, dropped, or a
// conflicting one, refused with ErrDuplicateSampleForTimestamp. The bytes
// of a closed chunk it replaces are added to m.retired. mu must be held.
func (s *memSeries) insert(smpl lateSample, m *chunkMem) (ok bool, err error) {
	s.insertRun([]lateSample{smpl}, m, func(_ int, ok1 bool, err1 error) { ok, err = ok1, err1 })
	return ok, err
}

// insertRun inserts xs, late samples sorted by time (t < s.maxt each), as
// insert would one after another, and calls done with each one's index
// and result. Those that go into one chunk are merged into it together:
// the chunk is decoded and encoded, and the chunks after it copied, once
// for them rather than once each (a backfill through the window of 100
// samples a commit took 9.7 µs a sample, BenchmarkAppendLateBulk). xs is
// not kept. mu must be held.
func (s *memSeries) insertRun(xs []lateSample, m *chunkMem, done func(i int, ok bool, err error)) {
	for lo := 0; lo < len(xs); {
		old, i, open := s.chunkFor(xs[lo].t, m.blockRange)
		hi := lo + 1
		for ; hi < len(xs); hi++ {
			if _, j, o := s.chunkFor(xs[hi].t, m.blockRange); j != i || o != open {
				break
			}
		}
		s.insertInto(xs[lo:hi], lo, old, i, open, m, done)
		lo = hi
	}
}

// insertInto merges xs, samples of xs[first:] that all go into the chunk
// chunkFor returned (old, closed chunk i, or the open one), into it.
func (s *memSeries) insertInto(xs []lateSample, first int, old headChunk, i int, open bool, m *chunkMem, done func(i int, ok bool, err error)) {
	var (
		data []byte
		enc  chunkenc.Encoding
	)
	if open {
		data, enc = s.openBytes(), s.open
	} else {
		data, enc = old.bytes(), old.encoding()
	}
	held, err := decodeSamples(m.late[:0], data, enc)
	m.late = held
	if err != nil {
		for k := range xs {
			done(first+k, false, fmt.Errorf("decode chunk for a late sample: %w", err))
		}
		return
	}
	// Merge: a sample at a time the chunk or an earlier one of xs has
	// is a duplicate or a conflict.
	samples := m.merged[:0]
	added, j := 0, 0
	for k, x := range xs {
		for j < len(held) && held[j].t < x.t {
			samples = append(samples, held[j])
			j++
		}
		switch {
		case j < len(held) && held[j].t == x.t:
			done(first+k, false, sameOrConflict(held[j], x))
		case len(samples) > 0 && samples[len(samples)-1].t == x.t:
			done(first+k, false, sameOrConflict(samples[len(samples)-1], x))
		default:
			samples = append(samples, x)
			added++
			done(first+k, true, nil)
		}
	}
	samples = append(samples, held[j:]...)
	m.merged = samples
	if added == 0 {
		return
	}
	m.inserted += uint64(added)
	s.touch(m, max(xs[0].t, math.MinInt64+1)-1)

	// Encode into as few chunks as the limit allows, of even sizes, so
	// that the next late sample finds room rather than a full chunk.
	enc2 := *m
	// The chunks stay XOR: the next late sample may decode them again.
	enc2.rangeLo, enc2.rangeHi, enc2.dense = 0, 0, nil
	enc2.noSpill = true // tmp's open chunk becomes the series'; see spillOpen
	enc2.marks = nil
	parts := (len(samples) + m.samples - 1) / m.samples
	enc2.samples = (len(samples) + parts - 1) / parts
	// tmp's chunks follow the chunks before the one replaced.
	tmp := memSeries{maxt: math.MinInt64}
	var chunks []headChunk
	if open {
		tmp.last, tmp.nChunks = s.last, s.nChunks
	} else if chunks = s.closedChunks(nil); i > 0 {
		tmp.last, tmp.nChunks = chunks[i-1].trailer(), uint32(i)
	}
	for _, x := range samples {
		switch {
		case x.h != nil:
			tmp.appendHistogram(x.t, x.h, &enc2)
		case x.fh != nil:
			tmp.appendFloatHistogram(x.t, x.fh, &enc2)
		default:
			tmp.append(x.t, x.v, &enc2)
		}
	}
	if open {
		s.last, s.nChunks = tmp.last, tmp.nChunks
		if region := s.dropSpill(m.arena); region != nil {
			m.retired = append(m.retired, region)
		}
		s.freeOpen(&m.arena.cells)
		s.setOpen(tmp.open, tmp.openHist(), &m.arena.cells, m.series)
		// tmp's newest sample is the series': only the open chunk's
		// start may have moved.
		s.xor, s.openSpan = tmp.xor, tmp.openSpan
		clear(samples)
		return
	}
	tmp.cut(&enc2)
	tmp.freeOpen(&m.arena.cells)
	// The chunks after the one replaced follow tmp's, copied anew; a
	// reader may hold the old copies.
	var last *byte
	last, m.spillBuf, m.retired = relink(m.arena, nil, chunks[i+1:], tmp.last, enc2.spillBuf, append(m.retired, old.bytes()))
	s.last, s.nChunks = last, s.nChunks+tmp.nChunks-uint32(i)-1
	clear(samples)
}

// sameOrConflict returns nil if x is the sample held at its time, else
// ErrDuplicateSampleForTimestamp.
func sameOrConflict(held, x lateSample) error {
	if sameSample(held, x) {
		return nil
	}
	return storage.ErrDuplicateSampleForTimestamp
}

// checkLate is the appendable check for a late sample x: it finds the
// sample the series holds at x.t, if any, and reports an exact duplicate
// as dup and another one as ErrDuplicateSampleForTimestamp. Only the
// chunk that may hold x.t is decoded. mu must be held.
func (s *memSeries) checkLate(x lateSample) (dup bool, err error) {
	c, _, open := s.chunkFor(x.t, 0)
	var (
		data       []byte
		enc        chunkenc.Encoding
		mint, maxt int64
	)
	if open {
		data, enc, mint, maxt = s.openBytes(), s.open, s.headMint(), s.maxt
	} else {
		data, enc, mint, maxt = c.bytes(), c.encoding(), c.mint, c.maxt()
	}
	if x.t < mint || x.t > maxt {
		return false, nil
	}
	var cur chunkCursor
	cur.reset(data, enc)
	at := cur.next()
	for at && cur.t() < x.t {
		at = cur.next()
	}
	if !at || cur.t() != x.t {
		return false, nil
	}
	if sameSample(cur.sample(), x) {
		return true, nil
	}
	return false, storage.ErrDuplicateSampleForTimestamp
}

// chunkFor returns the chunk a late sample at t goes into: the open one
// (open true) or closed chunk i, c. That is the last chunk starting at or
// before t, or the first if t is before all; between two chunks, the next
// one if only it is in t's block range, so that the sample does not make
// a chunk of its own. The chain is walked from its newest chunk, read in
// place. mu must be held, and the series must have a sample.
func (s *memSeries) chunkFor(t, blockRange int64) (c headChunk, i int, open bool) {
	n := int(s.nChunks)
	// next is chunk i+1, which starts after t, if hasNext; nextOpen if
	// that is the open chunk.
	var (
		next              headChunk
		hasNext, nextOpen bool
	)
	if s.hasOpenSamples() {
		if s.headMint() <= t || n == 0 {
			return headChunk{}, n, true
		}
		hasNext, nextOpen = true, true
	}
	p := s.last
	for i = n - 1; ; i-- {
		c, p = chunkAt(p)
		if c.mint <= t || i == 0 {
			break
		}
		next, hasNext, nextOpen = c, true, false
	}
	if hasNext && t > c.maxt() && blockRange > 0 {
		nextMint := next.mint
		if nextOpen {
			nextMint = s.headMint()
		}
		r := rangeStart(t, blockRange)
		if rangeStart(c.mint, blockRange) != r && rangeStart(nextMint, blockRange) == r {
			return next, i + 1, nextOpen
		}
	}
	return c, i, false
}

// decodeSamples appends the samples of chunk data of encoding enc to dst.
// Histograms are decoded into new ones, their counter reset hints made
// unknown where the new position of a sample may change what they said
// (see cleanHint).
func decodeSamples(dst []lateSample, data []byte, enc chunkenc.Encoding) ([]lateSample, error) {
	switch enc {
	case chunkenc.EncHistogram:
		var it chunkenc.HistogramIterator
		it.Reset(data)
		for it.Next() {
			h := it.AtHistogram(nil)
			h.CounterResetHint = cleanHint(h.CounterResetHint)
			dst = append(dst, lateSample{t: it.AtT(), h: h})
		}
		return dst, it.Err()
	case chunkenc.EncFloatHistogram:
		var it chunkenc.FloatHistogramIterator
		it.Reset(data)
		for it.Next() {
			fh := it.AtFloatHistogram(nil)
			fh.CounterResetHint = cleanHint(fh.CounterResetHint)
			dst = append(dst, lateSample{t: it.AtT(), fh: fh})
		}
		return dst, it.Err()
	}
	it := floatIterator(enc, data)
	for it.Next() {
		t, v := it.At()
		dst = append(dst, lateSample{t: t, v: v})
	}
	return dst, it.Err()
}

// floatIterator returns an iterator over the float chunk data: XOR, or
// decimal for a closed chunk restored from a checkpoint.
func floatIterator(enc chunkenc.Encoding, data []byte) interface {
	Next() bool
	At() (int64, float64)
	Err() error
} {
	if enc == chunkenc.EncDecimal {
		it := &chunkenc.DecimalIterator{}
		it.Reset(data)
		return it
	}
	return chunkenc.NewXORIterator(data)
}

// cleanHint returns the hint a decoded histogram is encoded again with.
// A reset and a gauge stay what they are; "not a reset" was said of the
// sample before it, which a late sample may change, so it becomes
// unknown and the chunk detects resets anew.
func cleanHint(hint histogram.CounterResetHint) histogram.CounterResetHint {
	if hint == histogram.NotCounterReset {
		return histogram.UnknownCounterReset
	}
	return hint
}

// sameSample reports whether two samples at one timestamp are the same:
// equal floats bit for bit (a repeated staleness marker too) or equal
// histograms of the same kind.
func sameSample(a, b lateSample) bool {
	if a.h == nil && a.fh == nil && b.h == nil && b.fh == nil {
		return math.Float64bits(a.v) == math.Float64bits(b.v)
	}
	return sameHistogram(a.h, a.fh, b.h, b.fh)
}
