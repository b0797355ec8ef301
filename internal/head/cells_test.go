package head

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// TestCellPool allocates and frees cells of random sizes, small and
// large, in random order, each filled with a pattern of its own: a cell
// comes zeroed, of the size asked, and keeps its pattern until freed, so
// that no two live cells overlap. Once all are freed the pool keeps at
// most one span of each size, with none of its cells handed out, and a
// few emptied ones for new spans of any size, which they take first.
func TestCellPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p cellPool
	defer p.close()
	type cell struct {
		b    []byte
		fill byte
	}
	var live []cell
	freeOne := func() {
		i := rng.IntN(len(live))
		c := live[i]
		if !bytes.Equal(c.b, bytes.Repeat([]byte{c.fill}, len(c.b))) {
			t.Fatalf("cell of %d bytes lost its pattern %d", len(c.b), c.fill)
		}
		p.free(unsafe.SliceData(c.b))
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	for i := range 50000 {
		if len(live) > 0 && rng.IntN(5) < 2 {
			freeOne()
			continue
		}
		n := 1 + rng.IntN(200)
		switch rng.IntN(100) {
		case 0:
			n = maxCell + 1 + rng.IntN(3*maxCell)
		case 1, 2:
			n = 1 + rng.IntN(maxCell)
		}
		b := p.alloc(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("alloc(%d) returned %d bytes, capacity %d", n, len(b), cap(b))
		}
		if !bytes.Equal(b, make([]byte, n)) {
			t.Fatalf("alloc(%d) returned memory not zeroed", n)
		}
		fill := byte(i%255 + 1)
		for j := range b {
			b[j] = fill
		}
		live = append(live, cell{b, fill})
	}
	if _, n := p.bytes(); n != len(live) {
		t.Fatalf("pool counts %d cells, %d are live", n, len(live))
	}
	for len(live) > 0 {
		freeOne()
	}
	mapped, n := p.bytes()
	if n != 0 {
		t.Fatalf("pool counts %d cells after all were freed", n)
	}
	sizes := map[int]bool{}
	for _, sp := range p.spans {
		if sp.used != 0 || sp.size > maxCell || sizes[sp.size] {
			t.Fatalf("after all cells were freed, a span of %d-byte cells with %d used (another of its size: %v)", sp.size, sp.used, sizes[sp.size])
		}
		sizes[sp.size] = true
	}
	if mapped != int64(len(p.spans)+len(p.parked))*cellSpanSize {
		t.Fatalf("pool counts %d bytes, holds %d spans and %d parked", mapped, len(p.spans), len(p.parked))
	}
	if len(p.parked) > maxParked {
		t.Fatalf("pool keeps %d emptied spans, at most %d", len(p.parked), maxParked)
	}
	// New spans take the parked memory, zeroed, before any from the
	// system.
	parked := len(p.parked)
	if parked == 0 {
		t.Fatal("no emptied span was kept")
	}
	for i := 0; len(p.parked) > 0; i++ {
		if i > (parked+1)*cellSpanSize/64 {
			t.Fatalf("%d spans parked after %d cells of 64 bytes", len(p.parked), i)
		}
		b := p.alloc(64)
		if !bytes.Equal(b, make([]byte, 64)) {
			t.Fatalf("alloc(64) number %d returned memory not zeroed", i)
		}
		b[0] = 1
	}
	if got, _ := p.bytes(); got != mapped {
		t.Fatalf("after taking %d parked spans, the pool maps %d bytes, had %d", parked, got, mapped)
	}
}

// TestCellPoolNumbers allocates and frees numbered cells of the series'
// size in random order, through spans taken and returned, and checks
// that each live cell is found by its number and its number by its
// address, that no two live cells share a number, and that a returned
// span's number goes to the next span taken.
func TestCellPoolNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := cellPool{numbered: true}
	defer p.close()
	size := int(unsafe.Sizeof(memSeries{}))
	live := map[uint32]unsafe.Pointer{}
	check := func() {
		t.Helper()
		for num, c := range live {
			if got := p.cell(num); got != c {
				t.Fatalf("cell(%#x) = %p, want %p", num, got, c)
			}
			if got := p.numberOf(c); got != num {
				t.Fatalf("numberOf(%p) = %#x, want %#x", c, got, num)
			}
		}
	}
	for round := range 3 {
		for range 5000 {
			c, num, err := p.allocNumbered(size)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := live[num]; dup || num>>cellOffsetBits == 0 {
				t.Fatalf("round %d: number %#x handed out twice, or in span 0", round, num)
			}
			live[num] = c
		}
		check()
		for num, c := range live {
			if rng.IntN(10) < 9 {
				p.free((*byte)(c))
				delete(live, num)
			}
		}
		check()
	}
	spans := map[uint32]bool{}
	for _, sp := range p.spans {
		spans[sp.number] = true
	}
	if n := len(*p.bases.Load()) - 1; n != len(spans)+len(p.freeNumbers) {
		t.Errorf("%d span numbers for %d spans and %d numbers returned", n, len(spans), len(p.freeNumbers))
	}
	// Once every number is taken, a cell that needs a new span is
	// refused; one in a span with room is not.
	full := make([]unsafe.Pointer, maxSpanNumber+1)
	copy(full, *p.bases.Load())
	p.bases.Store(&full)
	p.freeNumbers = nil
	for n := 0; ; n++ {
		if _, _, err := p.allocNumbered(size); err != nil {
			if !errors.Is(err, errTooManySpans) || n == 0 {
				t.Fatalf("allocNumbered with every span number taken, after %d cells: %v", n, err)
			}
			break
		}
	}
}

// TestCellPoolFreeForeign checks that freeing memory the pool did not
// hand out panics rather than corrupt a span.
func TestCellPoolFreeForeign(t *testing.T) {
	var p cellPool
	defer p.close()
	b := p.alloc(16)
	for name, ptr := range map[string]*byte{
		"the Go heap":   &make([]byte, 16)[0],
		"inside a cell": &b[8],
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("freeing memory of %s did not panic", name)
				}
			}()
			p.free(ptr)
		}()
	}
}

// TestSeriesExtraHeld checks that what a series keeps on the Go heap, its
// seriesExtra (an open histogram chunk, start times), stays alive though
// only the series, a cell the collector does not read, points to it: the
// pool holds it (cellPool.hold). Collections run with allocations of the
// same kind in between, which would take the memory of an extra freed.
func TestSeriesExtraHeld(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	const n = 200
	hist := func(i int) labels.Labels { return labels.FromStrings("__name__", "h", "i", fmt.Sprint(i)) }
	starts := func(i int) labels.Labels { return labels.FromStrings("__name__", "f", "i", fmt.Sprint(i)) }
	for k := range 3 {
		app := h.Appender(context.Background())
		for i := range n {
			if _, err := app.Append(0, hist(i), storage.Sample{T: int64(k), H: testHistogram(i + k)}); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Append(0, starts(i), storage.Sample{T: int64(k), V: float64(k), ST: int64(-1 - i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			runtime.GC()
			garbage := make([]*seriesExtra, 4*n)
			for j := range garbage {
				garbage[j] = &seriesExtra{starts: startTimes{list: []chunkenc.StartTime{{T: -7, ST: -7}}}}
			}
			runtime.KeepAlive(garbage)
		}
	}
	got := readAny(t, h, labels.MustNewMatcher(labels.MatchEqual, "__name__", "h"))
	for i := range n {
		var want []anySample
		for k := range 3 {
			want = append(want, anySample{t: int64(k), vt: promchunkenc.ValHistogram, fh: testHistogram(i + k).ToFloat(nil)})
		}
		if s := got[hist(i).String()]; !sameSamples(s, want) {
			t.Fatalf("%s: %v, want %v", hist(i), s, want)
		}
		s2 := h.series.getByHash(starts(i).Hash(), starts(i))
		s2.mu.Lock()
		st := s2.currentStart()
		s2.mu.Unlock()
		if st != int64(-1-i) {
			t.Fatalf("%s: start time %d, want %d", starts(i), st, -1-i)
		}
	}
}
