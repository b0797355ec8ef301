package head

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestCellPool allocates and frees cells of random sizes, small and
// large, in random order, each filled with a pattern of its own: a cell
// comes zeroed, of the size asked, and keeps its pattern until freed, so
// that no two live cells overlap. Once all are freed the pool keeps at
// most one span of each size, with none of its cells handed out.
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
	if mapped != int64(len(p.spans))*cellSpanSize {
		t.Fatalf("pool counts %d bytes, holds %d spans", mapped, len(p.spans))
	}
}

// TestCellPoolFreeForeign checks that freeing memory the pool did not
// hand out panics rather than corrupt a span.
func TestCellPoolFreeForeign(t *testing.T) {
	var p cellPool
	defer p.close()
	b := p.alloc(16)
	for name, ptr := range map[string]*byte{
		"the Go heap":      &make([]byte, 16)[0],
		"inside a cell":    &b[8],
		"after the spans'": (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), cellSpanSize)),
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
