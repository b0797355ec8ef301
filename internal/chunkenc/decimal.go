package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The decimal chunk holds float samples as integers: best when the values
// are all decimals of a few digits, integers (counters of bytes,
// packets, requests) or integers divided by a power of ten (seconds in
// hundredths, ratios). Exporters' values are mostly such, and an XOR
// chunk spends 20 to 30 bits on each of them, because consecutive values
// of a counter share few bits of their float representations. Here a
// value is its integer mantissa at the chunk's scale (or, for values
// that are not decimals, its bits), and a sample costs the bits of the
// difference from what the previous two predict: often none for the
// timestamp of a regular scrape, a dozen for the value of a counter.
//
// Its samples are known when it is written (blocks are written whole),
// so each column is bit-packed at the one width that makes it smallest,
// with an escape for outliers; decoding is a shift and an add per
// column, with no branch on the value's shape. The format is in
// docs/format/chunks.md.

// maxDecimalScale is the largest scale: values are mantissa/10^scale.
const maxDecimalScale = 15

// decimalMaxMantissa bounds a mantissa's magnitude: every integer below
// it is a float64, so mantissa and value convert both ways exactly.
const decimalMaxMantissa = 1 << 53

// pow10 holds 10^0 to 10^maxDecimalScale, each exact in a float64.
var pow10 = func() (p [maxDecimalScale + 1]float64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalHeaderSize is the fixed part of the header: count, scale and
// mode, and the widths of the two columns.
const decimalHeaderSize = 5

// decimalDod is the mode bit: values are coded as the difference of
// consecutive differences of their mantissas, not as the difference.
const decimalDod = 0x80

// decimalRaw in the mode's scale bits says that the mantissas are the
// values' IEEE 754 bits, as int64s: for values that are not decimals,
// such as full-precision measurements, whose bits differ from one sample
// to the next by about as many bits as the values' precision, where an
// XOR chunk also spends bits on where the difference lies.
const decimalRaw = 0x7f

// decimalFromMin added to the mode's scale bits (0 to 15, or decimalRaw
// to give decimalRawFromMin) says that value residuals are the
// mantissas' distances from the smallest of them, a header field: a
// bit a sample fewer than differences for values that wander in a band,
// whose differences take a sign.
const (
	decimalFromMin    = 0x40
	decimalRawFromMin = 0x7e
)

// Densifier re-encodes float chunks as decimal chunks where that is
// smaller: one XOR chunk at a time (Densify), or consecutive chunks of a
// series joined into one (Reset, Add, Encode), which saves each chunk's
// header and, in a block, its framing and index entry. Its buffers are
// reused from one chunk to the next; it is not safe for concurrent use.
// The zero value is ready.
type Densifier struct {
	xor    XORIterator
	dec    DecimalIterator
	ts     []int64
	vs     []float64
	ms     []int64
	result bitWriter
}

// Densify returns the samples of the XOR chunk xor as a decimal chunk if
// that is smaller, and otherwise ok false (see Encode). The result is
// valid until the next call.
func (d *Densifier) Densify(xor []byte) (out []byte, ok bool) {
	d.Reset()
	if d.Add(EncXOR, xor) != nil {
		return nil, false
	}
	return d.Encode(len(xor))
}

// Reset starts a new chunk.
func (d *Densifier) Reset() { d.ts, d.vs = d.ts[:0], d.vs[:0] }

// Add appends the samples of a float chunk, XOR or decimal, to the chunk
// being put together; they come after those added before. It returns an
// error for another encoding or a malformed chunk, after which the
// densifier must be Reset.
func (d *Densifier) Add(enc Encoding, data []byte) error {
	var it bulkDecoder
	switch enc {
	case EncXOR:
		it = &d.xor
	case EncDecimal:
		it = &d.dec
	default:
		return fmt.Errorf("%s chunk: not a float chunk", enc)
	}
	var err error
	d.ts, d.vs, err = appendChunk(it, data, math.MaxInt64, d.ts, d.vs)
	return err
}

// Len returns the number of samples added since Reset.
func (d *Densifier) Len() int { return len(d.ts) }

// Encode returns the samples added since Reset as a decimal chunk if it
// takes fewer than limit bytes, and otherwise ok false; also for fewer
// than two samples or more than a chunk's count holds. The mantissas
// are the values at the smallest scale at which every value is a
// decimal of at most 15 fraction digits with a mantissa under 2^53, or
// else the values' bits. Every value decodes to the same bits. The
// result is valid until the next call.
func (d *Densifier) Encode(limit int) (out []byte, ok bool) {
	n := len(d.ts)
	if n < 2 || n > math.MaxUint16 {
		return nil, false
	}
	scale, ok := d.mantissas()
	if !ok {
		scale = decimalRaw
		d.ms = d.ms[:0]
		for _, v := range d.vs {
			d.ms = append(d.ms, int64(math.Float64bits(v)))
		}
	}
	// One pass finds the bit lengths of each way to code the residuals
	// (see widths.best) and the smallest mantissa; the residuals are
	// computed again as they are written rather than kept.
	var ts, vs, dods, mins widths
	ms := d.ms
	lo := int64(math.MaxInt64)
	for i := 2; i < n; i++ {
		ts.add(zigzag((d.ts[i] - d.ts[i-1]) - (d.ts[i-1] - d.ts[i-2])))
		dv := ms[i] - ms[i-1]
		vs.add(zigzag(dv))
		dods.add(zigzag(dv - (ms[i-1] - ms[i-2])))
		lo = min(lo, ms[i])
	}
	for _, m := range ms[2:] {
		mins.add(uint64(m - lo))
	}
	k := n - 2
	tw, tcost := ts.best(k)
	vw, vcost := vs.best(k)
	mode := byte(scale)
	code := valuesDelta
	if dw, dcost := dods.best(k); dcost < vcost {
		vw, vcost, mode, code = dw, dcost, mode|decimalDod, valuesDod
	}
	if mw, mcost := mins.best(k); n > 2 && mcost+8*varintLen(lo-ms[0]) < vcost {
		vw, vcost, mode, code = mw, mcost, byte(scale+decimalFromMin), valuesFromMin
		if scale == decimalRaw {
			mode = decimalRawFromMin
		}
	}
	// The header's varints are at most 50 bytes: compare before writing
	// the columns, which are most of the size.
	if decimalHeaderSize+(tcost+vcost+7)/8 >= limit {
		return nil, false
	}
	w := &d.result
	w.buf = binary.BigEndian.AppendUint16(w.buf[:0], uint16(n))
	w.buf = append(w.buf, mode, tw, vw)
	w.free = 0
	w.buf = binary.AppendVarint(w.buf, d.ts[0])
	w.buf = binary.AppendVarint(w.buf, ms[0])
	w.buf = binary.AppendUvarint(w.buf, uint64(d.ts[1]-d.ts[0]))
	w.buf = binary.AppendVarint(w.buf, ms[1]-ms[0])
	if code == valuesFromMin {
		w.buf = binary.AppendVarint(w.buf, lo-ms[0])
	}
	// A sample's two residuals go out in one write when neither is
	// escaped and their widths fit in a word.
	pair := tw+vw <= 64
	for i := 2; i < n; i++ {
		tr := zigzag((d.ts[i] - d.ts[i-1]) - (d.ts[i-1] - d.ts[i-2]))
		var vr uint64
		switch code {
		case valuesDelta:
			vr = zigzag(ms[i] - ms[i-1])
		case valuesDod:
			vr = zigzag((ms[i] - ms[i-1]) - (ms[i-1] - ms[i-2]))
		default:
			vr = uint64(ms[i] - lo)
		}
		if pair && unescaped(tr, tw) && unescaped(vr, vw) {
			if tw+vw > 0 {
				w.writeBits(tr<<vw|vr, tw+vw)
			}
			continue
		}
		writeResidual(w, tr, tw)
		writeResidual(w, vr, vw)
	}
	if len(w.buf) >= limit {
		return nil, false
	}
	return w.buf, true
}

// JoinSamples is how many samples Join puts into one chunk at most. A
// chunk's header, framing and index entry take about 40 bytes, a third of
// a byte a sample at the head's 120 samples a chunk and a twelfth at
// 480, which is two hours (a block) at a 15 s interval. A query reading
// part of a chunk decodes it from its start, at 15-20 ns a sample.
const JoinSamples = 480

// Join passes a series' chunks cs, oldest first and disjoint, to emit
// as storage written whole and read many times wants them: each run of
// consecutive float chunks (XOR or decimal) holding at most JoinSamples
// samples together, all in one window of the given length (multiples of
// it apart, as the head's block ranges; 0 for no windows), as one
// decimal chunk where that is smaller than the run; any other XOR chunk
// as a decimal chunk where that is smaller; the rest as they are, also
// a run with a malformed chunk. emit's encoded says whether the chunk is
// encoded anew: its data is then valid until emit returns; otherwise it
// is the input's. Join stops at emit's first error and returns it.
func (d *Densifier) Join(cs []Meta, window int64, emit func(c Meta, encoded bool) error) error {
	for i := 0; i < len(cs); {
		j, n := i, 0
		for j < len(cs) && joinable(cs[i], cs[j], window) && n+cs[j].NumSamples() <= JoinSamples {
			n += cs[j].NumSamples()
			j++
		}
		if j-i >= 2 {
			if data, ok := d.join(cs[i:j]); ok {
				if err := emit(Meta{Data: data, MinT: cs[i].MinT, MaxT: cs[j-1].MaxT, Enc: EncDecimal}, true); err != nil {
					return err
				}
				i = j
				continue
			}
		}
		for j = max(j, i+1); i < j; i++ {
			c, encoded := cs[i], false
			if c.Enc == EncXOR {
				if data, ok := d.Densify(c.Data); ok {
					c.Data, c.Enc, encoded = data, EncDecimal, true
				}
			}
			if err := emit(c, encoded); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinable says whether c can join a run that starts with first.
func joinable(first, c Meta, window int64) bool {
	if (c.Enc != EncXOR && c.Enc != EncDecimal) || len(c.Data) < 2 {
		return false
	}
	return window <= 0 || floorDiv(first.MinT, window) == floorDiv(c.MaxT, window)
}

func floorDiv(t, r int64) int64 {
	q := t / r
	if t%r < 0 {
		q--
	}
	return q
}

// join returns the samples of cs as one decimal chunk if it is smaller
// than they are together.
func (d *Densifier) join(cs []Meta) (data []byte, ok bool) {
	d.Reset()
	size := 0
	for _, c := range cs {
		if d.Add(c.Enc, c.Data) != nil {
			return nil, false
		}
		size += len(c.Data)
	}
	return d.Encode(size)
}

// mantissas finds the smallest scale at which every value is an integer
// mantissa (see Densify) and fills ms with them.
func (d *Densifier) mantissas() (scale int, ok bool) {
	d.ms = d.ms[:0]
	for scale = 0; scale <= maxDecimalScale; scale++ {
		p := pow10[scale]
		d.ms = d.ms[:0]
		for _, v := range d.vs {
			m, ok := mantissa(v, p)
			if !ok {
				break
			}
			d.ms = append(d.ms, m)
		}
		if len(d.ms) == len(d.vs) {
			return scale, true
		}
	}
	return 0, false
}

// mantissa returns the integer m such that float64(m)/p is v, bit for
// bit, if there is one under decimalMaxMantissa.
func mantissa(v, p float64) (int64, bool) {
	x := math.Round(v * p)
	if !(math.Abs(x) < decimalMaxMantissa) { // also NaN
		return 0, false
	}
	m := int64(x)
	return m, math.Float64bits(float64(m)/p) == math.Float64bits(v)
}

// varintLen returns the bytes x takes as a signed varint.
func varintLen(x int64) int { return uvarintLen(zigzag(x)) }

// uvarintLen returns the bytes u takes as a uvarint.
func uvarintLen(u uint64) int { return (bits.Len64(u|1) + 6) / 7 }

func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// How Encode codes value residuals: differences of consecutive
// mantissas, differences of those, or distances from the smallest.
const (
	valuesDelta = iota
	valuesDod
	valuesFromMin
)

// widths counts residuals by bit length, to choose the width at which
// they take the fewest bits (best).
type widths struct {
	// byLen[b] counts the residuals of bit length b; ones[b] those of
	// them that are all ones (2^b-1), escaped at width b.
	byLen, ones [65]int32
}

func (c *widths) add(r uint64) {
	b := bits.Len64(r)
	c.byLen[b]++
	if r != 0 && r&(r+1) == 0 {
		c.ones[b]++
	}
}

// best returns the width at which the n residuals added take the fewest
// bits, and that number. At width w in [1, 63] a residual below 2^w-1 is
// written in w bits, and any other as w ones and then 64 bits; at 0 every
// residual must be 0 and takes no bits; at 64 each takes 64.
func (c *widths) best(n int) (width uint8, cost int) {
	width, cost = 64, 64*n
	if int(c.byLen[0]) == n {
		return 0, 0
	}
	longer := n - int(c.byLen[0]) // residuals longer than w bits
	for w := 1; w < 64; w++ {
		longer -= int(c.byLen[w])
		if c := w*n + 64*(longer+int(c.ones[w])); c < cost {
			width, cost = uint8(w), c
		}
	}
	return width, cost
}

// unescaped reports whether writeResidual writes r at width w < 64 as
// just its w bits: r is 0 at width 0.
func unescaped(r uint64, w uint8) bool { return w == 0 || (w < 64 && r < 1<<w-1) }

// writeResidual writes r at width w (see widths.best).
func writeResidual(wr *bitWriter, r uint64, w uint8) {
	switch {
	case w == 0:
	case w == 64:
		wr.writeBits(r, 64)
	case r < 1<<w-1:
		wr.writeBits(r, w)
	default:
		wr.writeBits(1<<w-1, w)
		wr.writeBits(r, 64)
	}
}

// DecimalIterator decodes the samples of a decimal chunk in order. Like
// XORIterator, it is reused through Reset, allocates only the error for
// malformed input, and keeps the bytes it was given until the next Reset.
type DecimalIterator struct {
	br   bitReader
	size int

	num, read uint16
	p         float64 // 10^scale
	raw       bool    // the mantissas are the values' bits
	stored    bool    // AppendSamples appends mantissas as they are (AppendStored)
	rising    bool    // see Rising
	dod       bool
	fromMin   bool // value residuals are distances from lo
	tw, vw    uint8
	t0, m0    int64
	dt1, dm1  int64
	lo        int64

	t, dt int64
	m, dm int64

	err error
	// pos is where AppendSamples reads next, in bits from the start of
	// br's stream. Once padded, pad holds the stream from bit padBase on
	// with decimalPad zero bytes after it. res is AppendSamples' buffer.
	// Reset keeps pad's and res' memory.
	pos     uint
	padded  bool
	padBase uint
	pad     []byte
	res     []uint64
}

// Reset makes the iterator start over on the decimal chunk b.
func (it *DecimalIterator) Reset(b []byte) {
	*it = DecimalIterator{size: len(b), res: it.res, pad: it.pad}
	if len(b) < decimalHeaderSize {
		it.corruptAt(0, "chunk shorter than its header")
		return
	}
	it.num = binary.BigEndian.Uint16(b)
	mode, tw, vw := b[2], b[3], b[4]
	scale := int(mode &^ decimalDod)
	switch {
	case scale == decimalRawFromMin:
		scale, it.fromMin = decimalRaw, true
	case scale >= decimalFromMin && scale <= decimalFromMin+maxDecimalScale:
		scale, it.fromMin = scale-decimalFromMin, true
	}
	if (scale > maxDecimalScale && scale != decimalRaw) || (it.fromMin && mode&decimalDod != 0) || tw > 64 || vw > 64 {
		it.corruptAt(2, "mode or column width out of range")
		return
	}
	it.raw, it.dod, it.tw, it.vw = scale == decimalRaw, mode&decimalDod != 0, tw, vw
	if !it.raw {
		it.p = pow10[scale]
	}
	rest := b[decimalHeaderSize:]
	var fields [5]int64
	nfields := 4
	if it.fromMin {
		nfields = 5
	}
	for i := range fields[:nfields] {
		var k int
		if i == 2 {
			var u uint64
			u, k = binary.Uvarint(rest)
			fields[i] = int64(u)
		} else {
			fields[i], k = binary.Varint(rest)
		}
		if k <= 0 {
			it.corruptAt(len(b)-len(rest), "truncated or overlong header varint")
			return
		}
		rest = rest[k:]
	}
	it.t0, it.m0, it.dt1, it.dm1 = fields[0], fields[1], fields[2], fields[3]
	it.lo = it.m0 + fields[4]
	it.br.reset(rest)
}

// At returns the current sample. It is only valid after Next returned true.
func (it *DecimalIterator) At() (int64, float64) {
	if it.raw {
		return it.t, math.Float64frombits(uint64(it.m))
	}
	return it.t, float64(it.m) / it.p
}

// AtT returns the current sample's timestamp.
func (it *DecimalIterator) AtT() int64 { return it.t }

// Err returns the error that ended the iteration, if any. It wraps
// ErrCorruptChunk and is a *CorruptChunkError.
func (it *DecimalIterator) Err() error { return it.err }

// Next advances to the next sample. It returns false at the end of the
// chunk or on malformed input; Err tells which.
func (it *DecimalIterator) Next() bool {
	if it.err != nil {
		return false
	}
	switch {
	case it.read >= it.num:
		if it.read == it.num {
			it.read++ // check the end once
			it.checkEnd()
		}
		return false
	case it.read == 0:
		it.t, it.m = it.t0, it.m0
	case it.read == 1:
		it.dt, it.dm = it.dt1, it.dm1
		it.t += it.dt
		it.m += it.dm
	default:
		tr, ok := it.readResidual(it.tw)
		if !ok {
			return false
		}
		vr, ok := it.readResidual(it.vw)
		if !ok {
			return false
		}
		it.dt += unzigzag(tr)
		it.t += it.dt
		switch {
		case it.fromMin:
			it.m = it.lo + int64(vr)
		case it.dod:
			it.dm += unzigzag(vr)
			it.m += it.dm
		default:
			it.m += unzigzag(vr)
		}
	}
	it.read++
	return true
}

// readResidual reads a residual written at width w (see widths.best).
func (it *DecimalIterator) readResidual(w uint8) (uint64, bool) {
	if w == 0 {
		return 0, true
	}
	r, ok := it.br.readBitsFast(w)
	if !ok {
		if r, ok = it.br.readBits(w); !ok {
			return 0, it.corrupt("truncated sample")
		}
	}
	if w == 64 || r != 1<<w-1 {
		return r, true
	}
	if r, ok = it.br.readBits(64); !ok {
		return 0, it.corrupt("truncated escaped residual")
	}
	return r, true
}

// checkEnd reports trailing data after the last sample.
func (it *DecimalIterator) checkEnd() {
	if problem := it.br.endProblem(); problem != "" {
		it.corrupt(problem)
	}
}

func (it *DecimalIterator) corrupt(reason string) bool {
	return it.corruptAt(it.br.offset(it.size), reason)
}

func (it *DecimalIterator) corruptAt(off int, reason string) bool {
	it.err = &CorruptChunkError{Encoding: EncDecimal, Offset: off, Sample: int(it.read), Reason: reason}
	return false
}

// AppendSamples appends the next samples of the chunk, up to limit of
// them, to ts and vs, leaving out those after maxt (which it consumes), for
// a reader that wants every sample: it decodes them in a few tight
// loops, a column at a time, where Next and At take a call and a dozen
// branches a sample (BenchmarkDecimalAppendSamples against
// BenchmarkDecimalIterate). It continues where the last call stopped,
// after Reset or its own calls, not after Next. It returns ok false, and
// appends nothing, on malformed input; the caller then learns why by
// iterating with Next from Reset.
func (it *DecimalIterator) AppendSamples(ts []int64, vs []float64, maxt int64, limit int) (_ []int64, _ []float64, ok bool) {
	if it.err != nil {
		return ts, vs, false
	}
	n0, k0 := len(ts), int(it.read)
	n := min(int(it.num)-k0, limit)
	it.rising = false
	if n <= 0 {
		return ts, vs, limit <= 0 || decimalEndOK(it.br.stream, it.pos)
	}
	ts, vs = slices.Grow(ts, n), slices.Grow(vs, n)
	ot, ov := ts[n0:n0+n], vs[n0:n0+n]
	if cap(it.res) < n {
		it.res = make([]uint64, max(n, 128))
	}
	res := it.res[:n]
	// The samples in the header: their mantissas go into res as they are.
	// rise has the differences of consecutive mantissas ORed into it (see
	// Rising).
	t, dt, m, dm := it.t, it.dt, it.m, it.dm
	from := m
	if k0 == 0 {
		from = it.m0
	}
	var rise uint64
	j := 0
	for ; j < n && k0+j < 2; j++ {
		if k0+j == 0 {
			t, m = it.t0, it.m0
		} else {
			dt, dm = it.dt1, it.dm1
			t, m = t+dt, m+dm
			rise |= uint64(dm)
		}
		ot[j], res[j] = t, uint64(m)
	}
	j0 := j
	// The timestamps, and the values' residuals: what is read from one
	// position checked (pos <= safe) ends within decimalPad bytes of it.
	// They are read from the chunk while that many bytes follow, and then
	// from a copy of its last bytes with zeros after them, so that a load
	// may go past the end; there a position past the end means a
	// truncated chunk. Positions count bits from the start of b, which
	// is base bits into the chunk.
	stream := it.br.stream
	b, base := stream, uint(0)
	if !it.padded && len(stream) < decimalPad {
		it.padTail(it.pos)
	}
	if it.padded {
		b, base = it.pad, it.padBase
	}
	pos, end := it.pos-base, uint(len(stream))*8-base
	safe := end
	if !it.padded {
		safe = uint(len(stream)-decimalPad) * 8
	}
	tw, vw := uint(it.tw), uint(it.vw)
	// Where a sample's two residuals take at most 32 bits, the 64 bits
	// from pos hold per samples, each taken from the top of the word
	// unless escaped; where at most 64, one sample. An escaped sample, or
	// one whose residuals take more, is read a column at a time.
	both := tw + vw
	per := 0
	if both != 0 && both <= 64 {
		per = int(64 / both)
	}
	shift, vmask := (64-both)&63, uint64(1)<<vw-1
	tesc, vesc := escapeOf(it.tw), escapeOf(it.vw)
	if both == 0 {
		for ; j < n; j++ {
			t += dt
			ot[j], res[j] = t, 0
		}
	}
	for j < n {
		if pos > safe {
			if pos > end { // once padded, safe is end
				return ts[:n0], vs[:n0], false
			}
			it.padTail(pos)
			b, base = it.pad, it.padBase
			pos, end, safe = pos-base, end-base, end-base
		}
		var tr, vr uint64
		if per >= 2 && tw == 0 {
			// Regular timestamps: every residual of theirs is zero.
			word := bitsFrom(b, pos)
			for k := min(j+per, n); j < k; j++ {
				vr = word >> shift
				if vr == vesc {
					break
				}
				word <<= vw
				pos += vw
				t += dt
				ot[j], res[j] = t, vr
			}
			if j == n || vr != vesc {
				continue
			}
			tr, vr, pos = readColumns(b, pos, tw, vw)
		} else if per >= 2 {
			word := bitsFrom(b, pos)
			for k := min(j+per, n); j < k; j++ {
				x := word >> shift
				tr, vr = x>>vw, x&vmask
				if tr == tesc || vr == vesc {
					break
				}
				word <<= both
				pos += both
				dt += unzigzag(tr)
				t += dt
				ot[j], res[j] = t, vr
			}
			if j == n || tr != tesc && vr != vesc {
				continue
			}
			tr, vr, pos = readColumns(b, pos, tw, vw)
		} else if x := bitsFrom(b, pos) >> shift; per == 1 && x>>vw != tesc && x&vmask != vesc {
			tr, vr = x>>vw, x&vmask
			pos += both
		} else {
			tr, vr, pos = readColumns(b, pos, tw, vw)
		}
		dt += unzigzag(tr)
		t += dt
		ot[j], res[j] = t, vr
		j++
	}
	if pos > end || (k0+n == int(it.num) && !decimalEndOK(stream, base+pos)) {
		return ts[:n0], vs[:n0], false
	}
	// The mantissas.
	switch {
	case it.fromMin:
		for k := j0; k < n; k++ {
			next := it.lo + int64(res[k])
			rise |= uint64(next - m)
			m = next
			res[k] = uint64(m)
		}
	case it.dod:
		for k := j0; k < n; k++ {
			dm += unzigzag(res[k])
			rise |= uint64(dm)
			m += dm
			res[k] = uint64(m)
		}
	default:
		for k := j0; k < n; k++ {
			d := unzigzag(res[k])
			rise |= uint64(d)
			m += d
			res[k] = uint64(m)
		}
	}
	it.pos, it.t, it.dt, it.m, it.dm, it.read = base+pos, t, dt, m, dm, uint16(k0+n)
	// The mantissas rise, never having wrapped around, where they
	// start in [0, 2^53] and every difference is in [0, 2^46): at most
	// 2^16 of those add up to under 2^62.
	it.rising = !it.raw && uint64(from) <= 1<<53 && rise < 1<<46
	if maxt != math.MaxInt64 {
		for k, t := range ot {
			if t > maxt {
				n = k
				break
			}
		}
	}
	// The values.
	if it.raw || it.stored {
		for k, r := range res[:n] {
			ov[k] = math.Float64frombits(r)
		}
	} else if p := it.p; p == 1 {
		for k, r := range res[:n] {
			ov[k] = float64(int64(r))
		}
	} else {
		for k, r := range res[:n] {
			ov[k] = float64(int64(r)) / p
		}
	}
	return ts[:n0+n], vs[:n0+n], true
}

// Rising reports whether each value the last AppendSamples (or
// AppendStored) call appended is at least the one before it, as a
// counter's are between resets: then they hold no staleness marker, and
// a reader looking for counter resets need not compare them. Values
// stored as bits are not compared: Rising is false for them, as after a
// call that found the chunk malformed. The mantissas are compared, as
// they are decoded, from the one before the first appended: a value
// after maxt, or one before the call, may make Rising false, as may a
// negative value or a rise of 2^46 or more from one mantissa to the
// next.
func (it *DecimalIterator) Rising() bool { return it.rising }

// AppendStored is AppendSamples for a reader that wants few of the
// values: it appends the values of decimals with fraction digits as the
// chunk holds them, leaving the division that makes them floats to
// Values.At. If div is 0 the values are floats (also integers, which
// become floats without a division); otherwise each is
// math.Float64frombits(uint64(m)) of the mantissa m of the value
// float64(m)/div.
func (it *DecimalIterator) AppendStored(ts []int64, vs []float64, maxt int64, limit int) (_ []int64, _ []float64, div float64, ok bool) {
	if it.stored = !it.raw && it.p != 1; it.stored {
		div = it.p
	}
	ts, vs, ok = it.AppendSamples(ts, vs, maxt, limit)
	it.stored = false
	return ts, vs, div, ok
}

// padTail copies the chunk from the byte holding bit pos on into pad,
// with decimalPad zero bytes after it, for AppendSamples to read past the
// end.
func (it *DecimalIterator) padTail(pos uint) {
	from := pos / 8
	it.pad = append(append(it.pad[:0], it.br.stream[from:]...), make([]byte, decimalPad)...)
	it.padded, it.padBase = true, from*8
}

// decimalEndOK reports whether no more than a byte's zero padding follows bit
// pos of b, the last sample's end: what Next checks at the end.
func decimalEndOK(b []byte, pos uint) bool {
	rest := uint(len(b))*8 - pos
	return rest < 8 && (rest == 0 || b[len(b)-1]<<(8-rest) == 0)
}

// escapeOf returns the residual that escapes a residual of width w (see
// writeResidual), or one no residual of that width can equal.
func escapeOf(w uint8) uint64 {
	if w == 0 || w == 64 {
		return math.MaxUint64
	}
	return 1<<w - 1
}

// readColumns reads a sample's residuals at bit pos of b, which must
// hold 32 bytes from pos/8, at widths tw and vw (see widths.best), and
// returns them and where the next sample starts.
func readColumns(b []byte, pos, tw, vw uint) (tr, vr uint64, next uint) {
	if tw != 0 {
		tr, pos = bitsFrom(b, pos)>>(64-tw), pos+tw
		if tw != 64 && tr == 1<<tw-1 {
			tr, pos = bitsFrom(b, pos), pos+64
		}
	}
	if vw != 0 {
		vr, pos = bitsFrom(b, pos)>>(64-vw), pos+vw
		if vw != 64 && vr == 1<<vw-1 {
			vr, pos = bitsFrom(b, pos), pos+64
		}
	}
	return tr, vr, pos
}

// decimalPad is how many zero bytes AppendSamples reads the chunk with
// after its end. From a position it checks, it reads a word of 64 bits
// and then, at most 64 bits on, a sample of two escaped residuals
// (2x64 bits and the widths, at most 64 together): 32 bytes after the
// position, and the last through a load of nine.
const decimalPad = 48

// bitsFrom returns the 64 bits at bit offset pos of b, which must hold
// nine bytes from pos/8.
func bitsFrom(b []byte, pos uint) uint64 {
	i := pos >> 3
	return binary.BigEndian.Uint64(b[i:])<<(pos&7) | uint64(b[i+8])>>(8-pos&7)
}
