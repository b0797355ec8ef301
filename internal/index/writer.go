package index

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Writer writes a block's index: AddSeries for every series, in strictly
// increasing label order, then Close. A series' ref in the block is its
// position in that order, from 0.
//
// The symbol table must come first in the file but is known only once
// every series is: the Writer keeps the series' labels and encoded chunk
// lists in memory until Close. The lists share one buffer rather than
// take an allocation and a slice header each, some 56 bytes a series
// while a block of a million series is written. It is used by one
// goroutine.
type Writer struct {
	w      *bufio.Writer
	series []labels.Labels
	// chunks holds the chunk lists encoded, series after series; the list
	// of series i ends at chunkEnds[i].
	chunks    []byte
	chunkEnds []int
	last      labels.Labels
	err       error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16)}
}

// AddSeries adds a series with its chunks, oldest first and not
// overlapping. The Writer keeps lset (label sets are immutable), not
// chunks.
func (w *Writer) AddSeries(lset labels.Labels, chunks []ChunkMeta) error {
	if w.err != nil {
		return w.err
	}
	if len(w.series) > 0 && labels.Compare(lset, w.last) <= 0 {
		return fmt.Errorf("index: series %s added after %s", lset, w.last)
	}
	if lset.IsEmpty() {
		return fmt.Errorf("index: series without labels")
	}
	if len(w.series) == math.MaxUint32 {
		return fmt.Errorf("index: more than %d series", math.MaxUint32)
	}
	for i, c := range chunks {
		if c.MaxT < c.MinT || i > 0 && (c.MinT <= chunks[i-1].MaxT || c.Ref <= chunks[i-1].Ref) {
			return fmt.Errorf("index: series %s: chunk %d out of order", lset, i)
		}
	}
	b := binary.AppendUvarint(w.chunks, uint64(len(chunks)))
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
	w.series = append(w.series, lset)
	w.chunks = b
	w.chunkEnds = append(w.chunkEnds, len(b))
	w.last = lset
	return nil
}

// Close writes the index and flushes it. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	cw := &countingWriter{w: w.w}
	var t toc
	t.nseries = uint64(len(w.series))

	// Symbols: every distinct name and value, sorted.
	symSet := map[string]struct{}{}
	for _, lset := range w.series {
		lset.Range(func(l labels.Label) {
			symSet[l.Name] = struct{}{}
			symSet[l.Value] = struct{}{}
		})
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
	cw.write(append(hdr, version, 0, 0, 0))

	t.symbols = cw.n
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(syms)))
	for _, s := range syms {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	t.crcSymbols = crc32.Checksum(b, castagnoli)
	cw.write(b)

	// Series, remembering their offsets and building the postings.
	t.series = cw.n
	offsets := make([]int64, len(w.series))
	// Refs are below 2^32 (AddSeries): half the memory of uint64s.
	postings := map[string]map[string][]uint32{}
	chunksStart := 0
	for i, lset := range w.series {
		offsets[i] = cw.n
		body := b[:0]
		body = binary.AppendUvarint(body, uint64(lset.Len()))
		lset.Range(func(l labels.Label) {
			body = binary.AppendUvarint(body, symID[l.Name])
			body = binary.AppendUvarint(body, symID[l.Value])
			vals := postings[l.Name]
			if vals == nil {
				vals = map[string][]uint32{}
				postings[l.Name] = vals
			}
			vals[l.Value] = append(vals[l.Value], uint32(i))
		})
		body = append(body, w.chunks[chunksStart:w.chunkEnds[i]]...)
		chunksStart = w.chunkEnds[i]
		entry := binary.AppendUvarint(nil, uint64(len(body)))
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
	names := make([]string, 0, len(postings))
	for n := range postings {
		names = append(names, n)
	}
	slices.Sort(names)
	var labelSec []byte
	nameOffsets := make([]int64, len(names))
	for i, name := range names {
		vals := postings[name]
		values := make([]string, 0, len(vals))
		for v := range vals {
			values = append(values, v)
		}
		slices.SortFunc(values, strings.Compare)
		nameOffsets[i] = int64(len(labelSec))
		labelSec = binary.AppendUvarint(labelSec, uint64(len(values)))
		var prevSym uint64
		var prevOff int64
		for j, v := range values {
			sym := symID[v]
			if j == 0 {
				labelSec = binary.AppendUvarint(labelSec, sym)
				labelSec = binary.AppendUvarint(labelSec, uint64(cw.n-t.postings))
			} else {
				labelSec = binary.AppendUvarint(labelSec, sym-prevSym)
				labelSec = binary.AppendUvarint(labelSec, uint64(cw.n-prevOff))
			}
			prevSym, prevOff = sym, cw.n
			list := vals[v]
			body := binary.AppendUvarint(b[:0], uint64(len(list)))
			var prev uint32
			for k, ref := range list {
				if k == 0 {
					body = binary.AppendUvarint(body, uint64(ref))
				} else {
					body = binary.AppendUvarint(body, uint64(ref-prev))
				}
				prev = ref
			}
			b = body
			cw.write(binary.AppendUvarint(nil, uint64(len(body))))
			cw.write(body)
			cw.write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, castagnoli)))
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
