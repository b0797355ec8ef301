package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// Source is what an index is read from: a local file mapped into memory,
// or an object in remote storage. If it also has Bytes() []byte (a mapped
// file), the Reader slices it instead of copying.
type Source interface {
	io.ReaderAt
	Size() int64
}

type bytesSource interface {
	Source
	Bytes() []byte
}

// Reader reads a block index. NewReader reads the table of contents, the
// symbol table, the offset table and the label tables, and checks their
// CRCs; series entries and postings lists are read when asked for, and
// their CRCs checked then. It is safe for concurrent use.
type Reader struct {
	src Source
	// starts is whether series entries may hold start times (version 2).
	starts  bool
	toc     toc
	symbols []string
	offsets []byte // the offset table
	labels  []byte // the label section
	names   []string
	nameOff map[string]int // name -> offset of its values in labels

	mu     sync.Mutex
	values map[string][]valueEntry // decoded value lists, by name
}

// valueEntry is a value of a label name and where its postings are.
type valueEntry struct {
	sym uint32
	off int64
}

// NewReader opens the index in src.
func NewReader(src Source) (*Reader, error) {
	size := src.Size()
	if size < headerSize+tocSize {
		return nil, &CorruptionError{Section: "toc", Reason: fmt.Sprintf("file of %d bytes is too short", size)}
	}
	hdr, err := ReadAt(src, 0, headerSize)
	if err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint32(hdr) != magic || hdr[4] != version && hdr[4] != versionNoStarts {
		return nil, &CorruptionError{Section: "header", Reason: "bad magic number or unknown version"}
	}
	tb, err := ReadAt(src, size-tocSize, tocSize)
	if err != nil {
		return nil, err
	}
	r := &Reader{src: src, starts: hdr[4] == version, nameOff: map[string]int{}, values: map[string][]valueEntry{}}
	if err := r.toc.decode(tb, size); err != nil {
		return nil, err
	}
	t := &r.toc
	section := func(name string, from, to int64, crc uint32) ([]byte, error) {
		b, err := ReadAt(src, from, to-from)
		if err != nil {
			return nil, err
		}
		if crc32.Checksum(b, castagnoli) != crc {
			return nil, &CorruptionError{Section: name, Offset: from, Reason: "checksum mismatch"}
		}
		return b, nil
	}
	symBytes, err := section("symbols", t.symbols, t.series, t.crcSymbols)
	if err != nil {
		return nil, err
	}
	d := decoder{b: symBytes}
	r.symbols = make([]string, d.count(1))
	for i := range r.symbols {
		r.symbols[i] = string(d.bytes(d.uvarint()))
	}
	if d.err != nil || len(d.b) > 0 {
		return nil, &CorruptionError{Section: "symbols", Offset: t.symbols, Reason: reason(d, "trailing bytes")}
	}
	if r.offsets, err = section("offsets", t.offsets, t.postings, t.crcOffsets); err != nil {
		return nil, err
	}
	if uint64(len(r.offsets)) != t.nseries*uint64(t.offsetWidth) {
		return nil, &CorruptionError{Section: "offsets", Offset: t.offsets, Reason: "size does not match the series count"}
	}
	if r.labels, err = section("labels", t.labels, t.names, t.crcLabels); err != nil {
		return nil, err
	}
	nameBytes, err := section("names", t.names, t.end, t.crcNames)
	if err != nil {
		return nil, err
	}
	d = decoder{b: nameBytes}
	for range d.count(2) {
		name, err := r.symbol(d.uvarint())
		off := d.uvarint()
		if err == nil && off >= uint64(len(r.labels)) {
			err = fmt.Errorf("values at %d outside the label section", off)
		}
		if err != nil {
			return nil, &CorruptionError{Section: "names", Offset: t.names, Reason: err.Error()}
		}
		r.names = append(r.names, name)
		r.nameOff[name] = int(off)
	}
	if d.err != nil || len(d.b) > 0 || !slices.IsSorted(r.names) {
		return nil, &CorruptionError{Section: "names", Offset: t.names, Reason: reason(d, "trailing bytes or names out of order")}
	}
	return r, nil
}

func reason(d decoder, otherwise string) string {
	if d.err != nil {
		return d.err.Error()
	}
	return otherwise
}

func (t *toc) decode(b []byte, size int64) error {
	if binary.BigEndian.Uint32(b[tocSize-4:]) != magic {
		return &CorruptionError{Section: "toc", Offset: size - tocSize, Reason: "bad magic number"}
	}
	if crc32.Checksum(b[:tocSize-8], castagnoli) != binary.BigEndian.Uint32(b[tocSize-8:]) {
		return &CorruptionError{Section: "toc", Offset: size - tocSize, Reason: "checksum mismatch"}
	}
	offs := make([]int64, 7)
	for i := range offs {
		offs[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	t.symbols, t.series, t.offsets, t.postings, t.labels, t.names, t.end = offs[0], offs[1], offs[2], offs[3], offs[4], offs[5], offs[6]
	t.nseries = binary.BigEndian.Uint64(b[56:])
	t.offsetWidth = b[64]
	t.crcSymbols = binary.BigEndian.Uint32(b[65:])
	t.crcOffsets = binary.BigEndian.Uint32(b[69:])
	t.crcLabels = binary.BigEndian.Uint32(b[73:])
	t.crcNames = binary.BigEndian.Uint32(b[77:])
	prev := int64(headerSize)
	for _, off := range offs {
		if off < prev {
			return &CorruptionError{Section: "toc", Offset: size - tocSize, Reason: "sections out of order"}
		}
		prev = off
	}
	if t.symbols != headerSize || t.end != size-tocSize || (t.offsetWidth != 4 && t.offsetWidth != 8) {
		return &CorruptionError{Section: "toc", Offset: size - tocSize, Reason: "sections do not fill the file"}
	}
	return nil
}

// ReadAt returns n bytes of src at off: a slice of its memory if src has
// Bytes (a mapped file), a copy otherwise. A range outside src is an error
// wrapping ErrCorrupt: whoever asks for it read a damaged offset.
func ReadAt(src Source, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > src.Size() {
		return nil, &CorruptionError{Section: "file", Offset: off, Reason: fmt.Sprintf("%d bytes wanted beyond the end", n)}
	}
	if m, ok := src.(bytesSource); ok {
		return m.Bytes()[off : off+n : off+n], nil
	}
	b := make([]byte, n)
	if _, err := src.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

func (r *Reader) symbol(id uint64) (string, error) {
	if id >= uint64(len(r.symbols)) {
		return "", fmt.Errorf("symbol %d of %d", id, len(r.symbols))
	}
	return r.symbols[id], nil
}

// Close releases nothing: the Source is the caller's.
func (r *Reader) Close() error { return nil }

// NumSeries returns the number of series.
func (r *Reader) NumSeries() uint64 { return r.toc.nseries }

// Series reads series ref: its labels into lset, built with b, its
// chunks into chunks and, unless starts is nil, the changes of its start
// time into starts, reusing their memory.
func (r *Reader) Series(ref storage.SeriesRef, b *labels.ScratchBuilder, lset *labels.Labels, chunks *[]ChunkMeta, starts *[]chunkenc.StartTime) error {
	if uint64(ref) >= r.toc.nseries {
		return fmt.Errorf("index: series %d of %d", ref, r.toc.nseries)
	}
	var off int64
	if r.toc.offsetWidth == 4 {
		off = int64(binary.BigEndian.Uint32(r.offsets[4*ref:]))
	} else {
		off = int64(binary.BigEndian.Uint64(r.offsets[8*ref:]))
	}
	corrupt := func(reason string) error {
		return &CorruptionError{Section: "series", Offset: off, Reason: fmt.Sprintf("series %d: %s", ref, reason)}
	}
	if off < r.toc.series || off >= r.toc.offsets {
		return corrupt("offset outside the series section")
	}
	head, err := ReadAt(r.src, off, min(binary.MaxVarintLen32, r.toc.offsets-off))
	if err != nil {
		return err
	}
	n, k := binary.Uvarint(head)
	if k <= 0 || n > uint64(r.toc.offsets-off) || off+int64(k)+int64(n)+4 > r.toc.offsets {
		return corrupt("bad length")
	}
	entry, err := ReadAt(r.src, off+int64(k), int64(n)+4)
	if err != nil {
		return err
	}
	body := entry[:n]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(entry[n:]) {
		return corrupt("checksum mismatch")
	}
	d := decoder{b: body}
	b.Reset()
	for range d.count(2) {
		name, err1 := r.symbol(d.uvarint())
		value, err2 := r.symbol(d.uvarint())
		if err1 != nil || err2 != nil {
			return corrupt("label symbol out of range")
		}
		b.Add(name, value)
	}
	*lset = b.Labels()
	*chunks = (*chunks)[:0]
	for i := range d.count(3) {
		var c ChunkMeta
		if i == 0 {
			c.MinT = d.varint()
			c.Ref = ChunkRef(d.uvarint())
		} else {
			prev := (*chunks)[i-1]
			c.MinT = prev.MaxT + int64(d.uvarint())
			c.Ref = prev.Ref + ChunkRef(d.uvarint())
		}
		c.MaxT = c.MinT + int64(d.uvarint())
		*chunks = append(*chunks, c)
	}
	if starts != nil {
		*starts = (*starts)[:0]
	}
	if r.starts && len(d.b) > 0 {
		var last int64
		for i := range d.count(2) {
			var t int64
			if i == 0 {
				t = d.varint()
			} else if t = last + int64(d.uvarint()); t <= last {
				return corrupt("start time changes out of order")
			}
			st := t - d.varint()
			if starts != nil {
				*starts = append(*starts, chunkenc.StartTime{T: t, ST: st})
			}
			last = t
		}
	}
	if d.err != nil || len(d.b) > 0 {
		return corrupt(reason(d, "trailing bytes"))
	}
	return nil
}

// LabelNames returns the sorted label names, in a slice of the caller's:
// queriers append external label names to it and sort it.
func (r *Reader) LabelNames() ([]string, error) { return slices.Clone(r.names), nil }

// LabelValues implements PostingsReader.
func (r *Reader) LabelValues(name string) ([]string, error) {
	entries, err := r.valueEntries(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = r.symbols[e.sym]
	}
	return out, nil
}

// valueEntries returns the values of name and where their postings are,
// decoding them once.
func (r *Reader) valueEntries(name string) ([]valueEntry, error) {
	off, ok := r.nameOff[name]
	if !ok {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.values[name]; ok {
		return e, nil
	}
	d := decoder{b: r.labels[off:]}
	n := d.count(2)
	entries := make([]valueEntry, 0, n)
	var sym uint64
	pos := r.toc.postings
	for i := range n {
		if i == 0 {
			sym = d.uvarint()
			pos += int64(d.uvarint())
		} else {
			delta := d.uvarint()
			sym += delta
			step := d.uvarint()
			pos += int64(step)
			if d.err == nil && (delta == 0 || step == 0) {
				d.err = fmt.Errorf("values out of order")
			}
		}
		if d.err == nil && (sym >= uint64(len(r.symbols)) || pos >= r.toc.labels) {
			d.err = fmt.Errorf("value %d of %q out of range", i, name)
		}
		entries = append(entries, valueEntry{sym: uint32(sym), off: pos})
	}
	if d.err != nil {
		return nil, &CorruptionError{Section: "labels", Offset: r.toc.labels + int64(off), Reason: d.err.Error()}
	}
	r.values[name] = entries
	return entries, nil
}

// Postings implements PostingsReader.
func (r *Reader) Postings(name string, values ...string) (Postings, error) {
	entries, err := r.valueEntries(name)
	if err != nil || len(entries) == 0 {
		return EmptyPostings(), err
	}
	its := make([]Postings, 0, len(values))
	for _, v := range values {
		// Symbols are sorted, so a value's symbol is found by search, and
		// the entries are in symbol order.
		sym, found := slices.BinarySearch(r.symbols, v)
		if !found {
			continue
		}
		i := sort.Search(len(entries), func(i int) bool { return entries[i].sym >= uint32(sym) })
		if i == len(entries) || entries[i].sym != uint32(sym) {
			continue
		}
		list, err := r.postingsAt(entries[i].off)
		if err != nil {
			return nil, err
		}
		its = append(its, NewListPostings(list))
	}
	return Merge(its...), nil
}

// postingsAt reads the postings list at off.
func (r *Reader) postingsAt(off int64) ([]storage.SeriesRef, error) {
	corrupt := func(reason string) error {
		return &CorruptionError{Section: "postings", Offset: off, Reason: reason}
	}
	end := r.toc.labels
	head, err := ReadAt(r.src, off, min(binary.MaxVarintLen64, end-off))
	if err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(head)
	if k <= 0 || n > uint64(end-off) || off+int64(k)+int64(n)+4 > end {
		return nil, corrupt("bad length")
	}
	entry, err := ReadAt(r.src, off+int64(k), int64(n)+4)
	if err != nil {
		return nil, err
	}
	body := entry[:n]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(entry[n:]) {
		return nil, corrupt("checksum mismatch")
	}
	d := decoder{b: body}
	list := make([]storage.SeriesRef, d.count(1))
	var ref uint64
	for i := range list {
		delta := d.uvarint()
		if i > 0 && delta == 0 {
			return nil, corrupt("refs out of order")
		}
		ref += delta
		if d.err == nil && ref >= r.toc.nseries {
			return nil, corrupt(fmt.Sprintf("ref %d of %d series", ref, r.toc.nseries))
		}
		list[i] = storage.SeriesRef(ref)
	}
	if d.err != nil || len(d.b) > 0 {
		return nil, corrupt(reason(d, "trailing bytes"))
	}
	return list, nil
}

// AllPostings implements PostingsReader: every ref, 0 to
// NumSeries-1.
func (r *Reader) AllPostings() (Postings, error) {
	return &rangePostings{next: 0, end: storage.SeriesRef(r.toc.nseries)}, nil
}

// rangePostings iterates over [next, end).
type rangePostings struct {
	cur, next, end storage.SeriesRef
}

func (p *rangePostings) Next() bool {
	if p.next >= p.end {
		return false
	}
	p.cur, p.next = p.next, p.next+1
	return true
}

func (p *rangePostings) Seek(ref storage.SeriesRef) bool {
	if p.next > 0 && p.cur >= ref {
		return true
	}
	p.next = max(p.next, ref)
	return p.Next()
}

func (p *rangePostings) At() storage.SeriesRef { return p.cur }
func (p *rangePostings) Err() error            { return nil }
