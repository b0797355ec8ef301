package head

import (
	"math"
	"sync"
)

// readers tracks the queries and checkpoints reading the head, each with
// the oldest time it reads, so that Truncate drops chunks only once no
// reader that may read them is running: a query started before a
// truncation sees the head as it was when the query started, and the
// arena may return a dropped chunk's memory to the system at once.
//
// A reader registers with the head's minValidTime read under mu, and
// Truncate raises minValidTime before it waits under mu for readers older
// than it: a reader registers either before the wait, which then waits
// for it, or after, and then reads no dropped chunk.
//
// All fields are guarded by mu.
type readers struct {
	mu     sync.Mutex
	done   sync.Cond // signalled when a reader ends
	next   uint64
	active map[uint64]int64 // reader id -> oldest time it reads
}

// acquire registers a reader of [max(mint, h.minValidTime), ...] and
// returns its id and its mint.
func (h *Head) acquireReader(mint int64) (id uint64, from int64) {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active == nil {
		r.active = map[uint64]int64{}
		r.done.L = &r.mu
	}
	from = max(mint, h.minValidTime.Load())
	r.next++
	r.active[r.next] = from
	return r.next, from
}

// releaseReader ends the reader id.
func (h *Head) releaseReader(id uint64) {
	r := &h.readers
	r.mu.Lock()
	delete(r.active, id)
	r.done.Broadcast()
	r.mu.Unlock()
}

// waitForReaders returns once no reader of time before mint is running.
func (h *Head) waitForReaders(mint int64) {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.oldest() < mint {
		r.done.Wait()
	}
}

// oldest returns the oldest time a running reader reads, math.MaxInt64 if
// none runs. mu must be held.
func (r *readers) oldest() int64 {
	oldest := int64(math.MaxInt64)
	for _, t := range r.active {
		oldest = min(oldest, t)
	}
	return oldest
}
