package head

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// symbolTable holds every distinct label pair (name and value) of the
// head's series once. A series keeps its labels as the ids of its pairs
// (memSeries.syms): a million series of eleven labels share some twenty
// thousand pairs, and a series' ids take about 14 bytes where its labels
// took about 190.
//
// A pair is kept as labels.Labels encodes a label in its one string
// (see appendPair), so that comparing a series' pairs with the labels a
// sample comes with is a comparison of bytes: equal is on the path of
// every sample a receiver appends by labels.
//
// An id is a series' own only while the series holds it: counts tracks
// how many hold each, and an id no series holds is freed for reuse. As
// queries and checkpoints may still read a series that Truncate removed,
// the head releases a removed series' ids only once those readers are
// done (see readers and retireSeries).
//
// Pairs are read without a lock: the directory of pages is loaded
// atomically, and a slot is written only for an id no live series holds,
// before any series holding it is published (to the maps, under their
// locks). Everything else but cells is guarded by mu. The strings handed
// out are ordinary Go strings: a caller may keep them after the id is
// freed.
type symbolTable struct {
	mu     sync.Mutex
	ids    map[string]uint32
	counts []uint32 // series holding each id, once per label that uses it
	free   []uint32 // ids no series holds
	dir    atomic.Pointer[[]*symbolPage]
	// cells hold the series' ids (symIDs), off the Go heap as they live
	// as long as their series, and freed when they are released: about
	// 16 MB at a million series. It is numbered: a series names its ids'
	// cell by number.
	cells cellPool
}

const (
	// symbolPageBits makes pages of 1024 pairs, 16 KiB: a head with a
	// few hundred distinct pairs has one page, and one of millions grows
	// its directory a page at a time.
	symbolPageBits = 10
	symbolPageSize = 1 << symbolPageBits
)

type symbolPage [symbolPageSize]string

func newSymbolTable() *symbolTable {
	t := &symbolTable{ids: map[string]uint32{}}
	t.dir.Store(&[]*symbolPage{})
	t.cells.numbered = true
	return t
}

// intern returns the ids of lset's pairs, each a uvarint, in label
// order, adding the pairs the table lacks and counting lset as a holder
// of each. It fails only if cells has no room for them (see
// cellPool.allocNumbered).
func (t *symbolTable) intern(lset labels.Labels) (symIDs, error) {
	var ids, pair [128]byte
	buf := ids[:0]
	t.mu.Lock()
	lset.Range(func(l labels.Label) {
		id := t.hold(appendPair(pair[:0], l.Name, l.Value))
		buf = binary.AppendUvarint(buf, uint64(id))
	})
	t.mu.Unlock()
	syms, err := newSymIDs(buf, &t.cells)
	if err != nil {
		t.mu.Lock()
		t.unhold(string(buf))
		t.mu.Unlock()
	}
	return syms, err
}

// symIDs is a series' label ids (see intern) as memSeries keeps them: the
// number of a cell of symbolTable.cells holding their length, a uvarint,
// which the ids follow, 0 for none. It takes 4 bytes in the series where
// a pointer took 8 and a string 16.
type symIDs struct{ num uint32 }

// newSymIDs returns a copy of ids as a symIDs, in a cell of cells, a
// numbered pool.
func newSymIDs(ids []byte, cells *cellPool) (symIDs, error) {
	var length [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(length[:], uint64(len(ids)))
	p, num, err := cells.allocNumbered(n + len(ids))
	if err != nil {
		return symIDs{}, err
	}
	b := unsafe.Slice((*byte)(p), n+len(ids))
	copy(b[copy(b, length[:n]):], ids)
	return symIDs{num}, nil
}

// idsOf returns the ids of s, a string sharing their memory: none for the
// zero symIDs.
func (t *symbolTable) idsOf(s symIDs) string {
	if s.num == 0 {
		return ""
	}
	p := t.cells.cell(s.num)
	var n uint64
	for i := 0; ; i++ {
		b := *(*byte)(unsafe.Add(p, i))
		n |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return unsafe.String((*byte)(unsafe.Add(p, i+1)), n)
		}
	}
}

// hold returns the id of pair, adding it if needed, and counts one more
// holder. mu must be held.
func (t *symbolTable) hold(pair []byte) uint32 {
	if id, ok := t.ids[string(pair)]; ok {
		t.counts[id]++
		return id
	}
	s := string(pair)
	var id uint32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
		t.counts[id] = 1
	} else {
		id = uint32(len(t.counts))
		t.counts = append(t.counts, 1)
	}
	pages := *t.dir.Load()
	if int(id>>symbolPageBits) == len(pages) {
		grown := append(pages[:len(pages):len(pages)], new(symbolPage))
		t.dir.Store(&grown)
		pages = grown
	}
	pages[id>>symbolPageBits][id&(symbolPageSize-1)] = s
	t.ids[s] = id
	return id
}

// release counts the series whose ids are syms as holders no more,
// freeing the ids they were the last to hold, and frees syms' memory. No
// reader may read syms any more.
func (t *symbolTable) release(syms []symIDs) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range syms {
		t.unhold(t.idsOf(s))
		t.cells.free((*byte)(t.cells.cell(s.num)))
	}
}

// unhold counts one holder less of each of ids, freeing the ids that had
// no other. mu must be held.
func (t *symbolTable) unhold(ids string) {
	pages := *t.dir.Load()
	for i := 0; i < len(ids); {
		var id uint64
		id, i = uvarint(ids, i)
		if t.counts[id]--; t.counts[id] > 0 {
			continue
		}
		slot := &pages[id>>symbolPageBits][id&(symbolPageSize-1)]
		delete(t.ids, *slot)
		*slot = ""
		t.free = append(t.free, uint32(id))
	}
}

// appendPair appends a label as labels.Labels (stringlabels) encodes it:
// the name and the value, each after its length, one byte below 255,
// else 255 and three bytes little-endian.
func appendPair(dst []byte, name, value string) []byte {
	dst = append(appendSize(dst, len(name)), name...)
	return append(appendSize(dst, len(value)), value...)
}

func appendSize(dst []byte, n int) []byte {
	if n < 255 {
		return append(dst, byte(n))
	}
	return append(dst, 255, byte(n), byte(n>>8), byte(n>>16))
}

// splitPair returns the name and value of a pair appendPair encoded.
func splitPair(p string) (name, value string) {
	n, i := readSize(p, 0)
	name, p = p[i:i+n], p[i+n:]
	n, i = readSize(p, 0)
	return name, p[i : i+n]
}

func readSize(p string, i int) (n, next int) {
	if p[i] < 255 {
		return int(p[i]), i + 1
	}
	return int(p[i+1]) | int(p[i+2])<<8 | int(p[i+3])<<16, i + 4
}

// pairsConcatenate tells whether labels.Labels.Bytes is the pairs of its
// labels one after another, as in Prometheus' default implementation
// (stringlabels). Then equal compares bytes; otherwise (another build
// tag) it compares label by label.
var pairsConcatenate = func() bool {
	ls := labels.FromStrings("a", "1", "b", strings.Repeat("v", 300))
	var enc []byte
	ls.Range(func(l labels.Label) { enc = appendPair(enc, l.Name, l.Value) })
	return string(enc) == string(ls.Bytes(nil))
}()

// symbols reads pairs by id.
type symbols []*symbolPage

func (t *symbolTable) symbols() symbols { return *t.dir.Load() }

func (p symbols) pair(id uint64) string { return p[id>>symbolPageBits][id&(symbolPageSize-1)] }

// label returns the label at i in syms and the offset of the next one.
func (p symbols) label(syms string, i int) (labels.Label, int) {
	id, i := uvarint(syms, i)
	name, value := splitPair(p.pair(id))
	return labels.Label{Name: name, Value: value}, i
}

// uvarint decodes the id at i in syms, which is well formed, and returns
// it with the offset after it.
func uvarint(syms string, i int) (uint64, int) {
	if b := syms[i]; b < 0x80 {
		return uint64(b), i + 1
	}
	var x uint64
	for s := uint(0); ; s += 7 {
		b := syms[i]
		i++
		x |= uint64(b&0x7f) << s
		if b < 0x80 {
			return x, i
		}
	}
}

// labels returns the labels syms holds, built with b.
func (t *symbolTable) labels(syms string, b *labels.ScratchBuilder) labels.Labels {
	t.build(syms, b)
	return b.Labels()
}

// overwriteLabels sets *ls to the labels syms holds, reusing b's memory:
// ls is valid until b is used again.
func (t *symbolTable) overwriteLabels(syms string, b *labels.ScratchBuilder, ls *labels.Labels) {
	t.build(syms, b)
	b.Overwrite(ls)
}

// build leaves in b the labels syms holds.
func (t *symbolTable) build(syms string, b *labels.ScratchBuilder) {
	p := t.symbols()
	b.Reset()
	for i := 0; i < len(syms); {
		var l labels.Label
		l, i = p.label(syms, i)
		b.Add(l.Name, l.Value)
	}
}

// rangeLabels calls f on each label syms holds, in order.
func (t *symbolTable) rangeLabels(syms string, f func(labels.Label)) {
	p := t.symbols()
	for i := 0; i < len(syms); {
		var l labels.Label
		l, i = p.label(syms, i)
		f(l)
	}
}

// get returns the value of label name in syms, "" if it has none.
func (t *symbolTable) get(syms, name string) string {
	p := t.symbols()
	for i := 0; i < len(syms); {
		var l labels.Label
		l, i = p.label(syms, i)
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// equal reports whether syms holds exactly lset.
func (t *symbolTable) equal(syms string, lset labels.Labels) bool {
	if !pairsConcatenate {
		return t.equalEach(syms, lset)
	}
	// Labels of up to 256 bytes (most) are copied on the stack.
	var buf [256]byte
	data := lset.Bytes(buf[:0])
	p := t.symbols()
	off := 0
	for i := 0; i < len(syms); {
		var id uint64
		id, i = uvarint(syms, i)
		pair := p.pair(id)
		if len(data)-off < len(pair) || string(data[off:off+len(pair)]) != pair {
			return false
		}
		off += len(pair)
	}
	return off == len(data)
}

// equalEach is equal, label by label.
func (t *symbolTable) equalEach(syms string, lset labels.Labels) bool {
	p := t.symbols()
	i, eq := 0, true
	lset.Range(func(l labels.Label) {
		if !eq {
			return
		}
		if i == len(syms) {
			eq = false
			return
		}
		var have labels.Label
		have, i = p.label(syms, i)
		eq = have == l
	})
	return eq && i == len(syms)
}

// compare orders the label sets a and b hold as labels.Compare orders
// them. An id stands for one pair, so pairs are compared only where the
// ids differ.
func (t *symbolTable) compare(a, b string) int {
	p := t.symbols()
	return compareIDs(a, b, func(x, y uint64) int { return comparePairs(p.pair(x), p.pair(y)) })
}

// comparePairs orders two pairs as labels.Compare orders labels: by name,
// then by value.
func comparePairs(a, b string) int {
	an, av := splitPair(a)
	bn, bv := splitPair(b)
	if c := strings.Compare(an, bn); c != 0 {
		return c
	}
	return strings.Compare(av, bv)
}

// compareIDs orders the label sets a and b hold, id by id: the first
// ids that differ by pairs, which orders them; else the shorter first.
func compareIDs(a, b string, pairs func(x, y uint64) int) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var x, y uint64
		x, i = uvarint(a, i)
		y, j = uvarint(b, j)
		if x != y {
			return pairs(x, y)
		}
	}
	return cmp.Compare(len(a)-i, len(b)-j)
}

// ranks returns every id's place in the order of its pair, by name and
// then value, from 1; an id no series holds gets 0. Label sets compared
// id by id through it are in labels.Compare's order. The pairs are
// copied under the lock and sorted outside it.
func (t *symbolTable) ranks() []uint32 {
	type held struct {
		id   uint32
		pair string
	}
	t.mu.Lock()
	p := t.symbols()
	pairs := make([]held, 0, len(t.counts)-len(t.free))
	for id, n := range t.counts {
		if n > 0 {
			pairs = append(pairs, held{uint32(id), p.pair(uint64(id))})
		}
	}
	ranks := make([]uint32, len(t.counts))
	t.mu.Unlock()
	slices.SortFunc(pairs, func(a, b held) int { return comparePairs(a.pair, b.pair) })
	for i, h := range pairs {
		ranks[h.id] = uint32(i + 1)
	}
	return ranks
}
