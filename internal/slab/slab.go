// Package slab hands out values of one type from arrays of a few KiB, so
// that values made one after another lie one after another in memory.
//
// The receivers create a fleet's streams in the order its requests name
// them and then append to them in that same order, request after request.
// Allocated one by one, the structs a sample touches were scattered among
// whatever else was allocated meanwhile, and at 100k series each sample
// waited on a cache miss for each of them; from a slab they are read in
// address order, which the processor's prefetcher follows. (The head's
// series come from cells handed out in address order for the same
// reason.) The cost: a slab stays in memory while any of its values is
// referenced.
package slab

import (
	"sync"
	"unsafe"
)

// size is the bytes of a slab: a page, so that one value left alive
// keeps at most a page of dead neighbours.
const size = 4096

// mallocHeader is what Go's allocator adds to an object of over 512 bytes
// that holds pointers (a pointer to its type), within the object's size
// class: an array of exactly a page of such values takes the next class,
// 4864 bytes, and a series of 128 bytes cost 152. A slab leaves room for
// it.
const mallocHeader = 8

// perSlab returns how many values of T a slab holds.
func perSlab[T any]() int {
	var zero T
	return max(1, int((size-mallocHeader)/unsafe.Sizeof(zero)))
}

// Slab hands out new zero values of T. Its zero value is ready to use,
// and it is safe for concurrent use.
type Slab[T any] struct {
	mu   sync.Mutex
	free []T
}

// New returns a pointer to a new zero T, next to the one returned before
// unless that was the last of its slab.
func (s *Slab[T]) New() *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) == 0 {
		s.free = make([]T, perSlab[T]())
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}
