package index

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
)

// Writer writes a block's index: AddSeries for every series, in strictly
// increasing label order, then Close. A series' ref in the block is its
// position in that order, from 0.
//
// The symbol table must come first in the file but is known only once
// every series is, so the Writer keeps what it needs of the series until
// Close: each distinct label pair once, and every series as the ids of
// its pairs and its encoded chunk list, series after series in one
// buffer. A head's labels are built for each series it writes, and
// keeping them was 200 bytes a series while a block of a million series
// was written; the ids take about 20.
//
// Each pair's postings are written as they are on disk, the first ref
// and then the gaps between refs as varints, into one buffer at Close;
// AddSeries counts their bytes, so that the buffer is allocated once and
// exactly. A list of 4-byte refs took 44 MB while a block of a million
// series of 11 labels was written, the varints about a third of that.
// It is used by one goroutine.
type Writer struct {
	w *bufio.Writer
	// pairIDs numbers the distinct pairs by their key (see pairKey);
	// pairs[id] is the pair and post[id] what is known of its postings.
	pairIDs map[string]uint32
	pairs   []labels.Label
	post    []pairPostings
	// series holds the nseries series added, one after another in
	// blocks (see keep): the count of its labels, their pair ids, the
	// count of its chunks, the chunks, the count of its start time
	// changes and the changes, all encoded; held counts their bytes.
	// entry is AddSeries' buffer for one.
	series  [][]byte
	held    int
	entry   []byte
	nseries int
	// starts is set once a series has start times: the index then has
	// version 2.
	starts bool
	last   labels.Labels
	key    []byte
	err    error
}

// pairPostings is what the Writer knows of a pair's postings: how many
// series hold the pair, the last of them and the bytes of the list's
// varints. A list's first ref is its gap from 0.
type pairPostings struct {
	holders, last uint32
	size          int
}

// add counts series ref, added after every other holder, into the list.
func (p *pairPostings) add(ref uint32) {
	p.holders++
	p.size += uvarintLen(uint64(ref - p.last))
	p.last = ref
}

// uvarintLen returns the length of x as a uvarint.
func uvarintLen(x uint64) int {
	return (bits.Len64(x|1) + 6) / 7
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16), pairIDs: map[string]uint32{}}
}

// AddSeries adds a series with its chunks, oldest first and not
// overlapping, and the changes of its start time (see chunkenc.StartAt),
// oldest first. The Writer keeps none of them.
func (w *Writer) AddSeries(lset labels.Labels, chunks []ChunkMeta, starts []chunkenc.StartTime) error {
	if w.err != nil {
		return w.err
	}
	if w.nseries > 0 && labels.Compare(lset, w.last) <= 0 {
		return fmt.Errorf("index: series %s added after %s", lset, w.last)
	}
	if lset.IsEmpty() {
		return fmt.Errorf("index: series without labels")
	}
	if w.nseries == math.MaxUint32 {
		return fmt.Errorf("index: more than %d series", math.MaxUint32)
	}
	for i, c := range chunks {
		if c.MaxT < c.MinT || i > 0 && (c.MinT <= chunks[i-1].MaxT || c.Ref <= chunks[i-1].Ref) {
			return fmt.Errorf("index: series %s: chunk %d out of order", lset, i)
		}
	}
	for i := 1; i < len(starts); i++ {
		if starts[i].T <= starts[i-1].T {
			return fmt.Errorf("index: series %s: start time change %d out of order", lset, i)
		}
	}
	b := binary.AppendUvarint(w.entry[:0], uint64(lset.Len()))
	lset.Range(func(l labels.Label) {
		b = binary.AppendUvarint(b, uint64(w.pairID(l)))
	})
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	for i, c := range chunks {
		if i == 0 {
			b = binary.AppendVarint(b, c.MinT)
			b = binary.AppendUvarint(b, uint64(c.Ref))
		} else {
			b = binary.AppendUvarint(b, uint64(c.MinT-chunks[i-1].MaxT))
			b = binary.AppendUvarint(b, uint64(c.Ref-chunks[i-1].Ref))
		}
		b = binary.AppendUvarint(b, uint64(c.MaxT-c.MinT))
	}
	// The count of start time changes is kept here even if 0; the file
	// has it only if not (see Close).
	b = binary.AppendUvarint(b, uint64(len(starts)))
	if len(starts) > 0 {
		w.starts = true
		for i, st := range starts {
			if i == 0 {
				b = binary.AppendVarint(b, st.T)
			} else {
				b = binary.AppendUvarint(b, uint64(st.T-starts[i-1].T))
			}
			b = binary.AppendVarint(b, st.T-st.ST)
		}
	}
	w.entry = b
	w.keep(b)
	w.nseries++
	// The labels are built for this call: keep the last set only.
	w.last = lset
	return nil
}

// maxSeriesBlock is the largest block keep allocates for the series.
const maxSeriesBlock = 256 << 10

// keep appends the encoded series entry to the series kept. They are kept
// in blocks, each twice as large as what the ones before hold, up to
// maxSeriesBlock, rather than in one buffer grown by append: that held up
// to twice the series' bytes, and the array it grew from until the next
// collection, 55 MB at a moment while a block of a million series was
// written, for some 30 MB of series. An entry is never split.
func (w *Writer) keep(entry []byte) {
	n := len(w.series)
	if n == 0 || cap(w.series[n-1])-len(w.series[n-1]) < len(entry) {
		size := max(min(2*w.held, maxSeriesBlock), 4096, len(entry))
		w.series = append(w.series, make([]byte, 0, size))
		n++
	}
	w.series[n-1] = append(w.series[n-1], entry...)
	w.held += len(entry)
}

// pairID returns the id of l, numbering it if it is new, and counts one
// more series holding it.
func (w *Writer) pairID(l labels.Label) uint32 {
	w.key = pairKey(w.key[:0], l)
	id, ok := w.pairIDs[string(w.key)]
	if !ok {
		id = uint32(len(w.pairs))
		key := string(w.key)
		w.pairIDs[key] = id
		// The pair's strings are the key's, not the caller's.
		n := len(key) - len(l.Value)
		w.pairs = append(w.pairs, labels.Label{Name: key[n-len(l.Name) : n], Value: key[n:]})
		w.post = append(w.post, pairPostings{})
	}
	w.post[id].add(uint32(w.nseries))
	return id
}

// pairKey appends the key of l: the name's length, the name and the
// value.
func pairKey(dst []byte, l labels.Label) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
	return append(append(dst, l.Name...), l.Value...)
}

// Close writes the index and flushes it. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	cw := &countingWriter{w: w.w}
	var t toc
	t.nseries = uint64(w.nseries)

	// Symbols: every distinct name and value, sorted.
	symSet := map[string]struct{}{}
	for _, l := range w.pairs {
		symSet[l.Name] = struct{}{}
		symSet[l.Value] = struct{}{}
	}
	syms := make([]string, 0, len(symSet))
	for s := range symSet {
		syms = append(syms, s)
	}
	slices.Sort(syms)
	symID := make(map[string]uint64, len(syms))
	for i, s := range syms {
		symID[s] = uint64(i)
	}

	hdr := binary.BigEndian.AppendUint32(nil, magic)
	v := byte(versionNoStarts)
	if w.starts {
		v = version
	}
	cw.write(append(hdr, v, 0, 0, 0))

	t.symbols = cw.n
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(syms)))
	for _, s := range syms {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	t.crcSymbols = crc32.Checksum(b, castagnoli)
	cw.write(b)

	// The postings of all pairs in one buffer, pair after pair, encoded
	// as on disk: pair id's list starts at next[id] before the series
	// fill it, and ends there after.
	next := make([]int, len(w.pairs))
	total := 0
	for id := range w.post {
		p := &w.post[id]
		next[id] = total
		total += p.size
		p.last = 0 // the fill below counts the gaps again
	}
	postings := make([]byte, total)

	// Series, remembering their offsets and filling the postings.
	t.series = cw.n
	offsets := make([]int64, w.nseries)
	var rest, entry []byte
	for i := range w.nseries {
		offsets[i] = cw.n
		if len(rest) == 0 {
			// The next block; the Writer lets go of it, so that the
			// collector may free it once read.
			rest, w.series[0], w.series = w.series[0], nil, w.series[1:]
		}
		d := decoder{b: rest}
		n := d.uvarint()
		body := binary.AppendUvarint(b[:0], n)
		for range n {
			id := d.uvarint()
			l := w.pairs[id]
			body = binary.AppendUvarint(body, symID[l.Name])
			body = binary.AppendUvarint(body, symID[l.Value])
			p := &w.post[id]
			next[id] += binary.PutUvarint(postings[next[id]:], uint64(uint32(i)-p.last))
			p.last = uint32(i)
		}
		// The chunk list, as AddSeries encoded it: its count, then three
		// varints a chunk.
		list := d.b
		for range 3 * d.uvarint() {
			d.uvarint()
		}
		if d.err != nil {
			w.err = fmt.Errorf("index: series %d: %w", i, d.err)
			return w.err
		}
		body = append(body, list[:len(list)-len(d.b)]...)
		// The start time changes, if any: their count, then two varints
		// a change.
		list = d.b
		if n := d.uvarint(); n > 0 {
			for range 2 * n {
				d.uvarint()
			}
			body = append(body, list[:len(list)-len(d.b)]...)
		}
		if d.err != nil {
			w.err = fmt.Errorf("index: series %d: %w", i, d.err)
			return w.err
		}
		rest = d.b
		entry = binary.AppendUvarint(entry[:0], uint64(len(body)))
		entry = append(entry, body...)
		entry = binary.BigEndian.AppendUint32(entry, crc32.Checksum(body, castagnoli))
		cw.write(entry)
		b = body
	}

	// The offset table: fixed width, so that a series is found at once.
	t.offsets = cw.n
	t.offsetWidth = 4
	if cw.n > math.MaxUint32 {
		t.offsetWidth = 8
	}
	b = b[:0]
	for _, off := range offsets {
		if t.offsetWidth == 4 {
			b = binary.BigEndian.AppendUint32(b, uint32(off))
		} else {
			b = binary.BigEndian.AppendUint64(b, uint64(off))
		}
	}
	t.crcOffsets = crc32.Checksum(b, castagnoli)
	cw.write(b)

	// Postings, per name and value in sorted order, each list as its
	// length, the list and its CRC; the label section records where each
	// starts.
	t.postings = cw.n
	byName := map[string][]uint32{} // pair ids
	for id, l := range w.pairs {
		byName[l.Name] = append(byName[l.Name], uint32(id))
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	var labelSec []byte
	nameOffsets := make([]int64, len(names))
	for i, name := range names {
		ids := byName[name]
		slices.SortFunc(ids, func(a, b uint32) int { return strings.Compare(w.pairs[a].Value, w.pairs[b].Value) })
		nameOffsets[i] = int64(len(labelSec))
		labelSec = binary.AppendUvarint(labelSec, uint64(len(ids)))
		var prevSym uint64
		var prevOff int64
		for j, id := range ids {
			sym := symID[w.pairs[id].Value]
			if j == 0 {
				labelSec = binary.AppendUvarint(labelSec, sym)
				labelSec = binary.AppendUvarint(labelSec, uint64(cw.n-t.postings))
			} else {
				labelSec = binary.AppendUvarint(labelSec, sym-prevSym)
				labelSec = binary.AppendUvarint(labelSec, uint64(cw.n-prevOff))
			}
			prevSym, prevOff = sym, cw.n
			// The list's body is its count and its varints; it goes out
			// after its length and before its CRC.
			p := w.post[id]
			list := postings[next[id]-p.size : next[id]]
			count := binary.AppendUvarint(b[:0], uint64(p.holders))
			b = binary.AppendUvarint(count, uint64(len(count)+len(list)))
			cw.write(b[len(count):])
			cw.write(count)
			cw.write(list)
			crc := crc32.Update(crc32.Checksum(count, castagnoli), castagnoli, list)
			cw.write(binary.BigEndian.AppendUint32(b[:0], crc))
		}
	}

	t.labels = cw.n
	t.crcLabels = crc32.Checksum(labelSec, castagnoli)
	cw.write(labelSec)

	// Names: each label name's symbol and where its values start in the
	// label section.
	t.names = cw.n
	b = binary.AppendUvarint(b[:0], uint64(len(names)))
	for i, name := range names {
		b = binary.AppendUvarint(b, symID[name])
		b = binary.AppendUvarint(b, uint64(nameOffsets[i]))
	}
	t.crcNames = crc32.Checksum(b, castagnoli)
	cw.write(b)

	t.end = cw.n
	cw.write(t.append(b[:0]))
	if cw.err != nil {
		w.err = cw.err
		return cw.err
	}
	w.err = fmt.Errorf("index: writer closed")
	return w.w.Flush()
}

// countingWriter counts what it writes and keeps the first error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}
