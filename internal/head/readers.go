package head

import (
	"math"
	"sync"
	"unsafe"
)

// readers tracks the queries and checkpoints reading the head, each with
// the oldest time it reads, so that chunks leave the head only in ways no
// reader notices:
//
//   - Truncate waits for the readers that started before it and read the
//     range it drops: a query started before a block took over a range
//     sees the head's samples of it. A reader that starts later finds the
//     block in the store's list, which gets it before the head is
//     truncated. Truncate waits only for readers older than itself, so a
//     stream of new queries cannot hold it up.
//   - The bytes of chunks dropped by Truncate, or replaced because a late
//     sample went into them, are retired (retireChunks): freed once every
//     reader that may hold them is done, as the arena may return their
//     memory to the system at once.
//   - The series Truncate removed are retired (retireSeries) the same
//     way, their label ids and memory with them: a reader may still be
//     reading a series it found before, and a freed id may be given to
//     another label pair, the memory to another series.
//
// Reader ids grow with each reader; a retired chunk records the last id
// handed out when it left its series, and no reader with a higher id can
// have seen it there.
//
// All fields are guarded by mu.
type readers struct {
	mu      sync.Mutex
	done    sync.Cond // signalled when a reader ends
	next    uint64
	active  map[uint64]int64 // reader id -> oldest time it reads
	retired []retiredChunk   // by after
	// retiredSeries are removed series, by after.
	retiredSeries []retiredSeries
}

// retiredSeries are series no longer in the head, which readers up to id
// after may still read.
type retiredSeries struct {
	series []*memSeries
	after  uint64
}

// retiredChunk is the bytes of a chunk no series holds any more, which
// readers up to id after may still read.
type retiredChunk struct {
	data  []byte
	after uint64
}

// acquireReader registers a reader of the head from mint on and returns
// its id.
func (h *Head) acquireReader(mint int64) uint64 {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active == nil {
		r.active = map[uint64]int64{}
		r.done.L = &r.mu
	}
	r.next++
	r.active[r.next] = mint
	return r.next
}

// releaseReader ends the reader id, freeing the retired chunks no running
// reader may hold.
func (h *Head) releaseReader(id uint64) {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, id)
	r.done.Broadcast()
	if len(r.retired) == 0 && len(r.retiredSeries) == 0 {
		return
	}
	oldest := r.oldestID()
	n := 0
	for n < len(r.retired) && r.retired[n].after < oldest {
		h.arena.release(r.retired[n].data)
		n++
	}
	clear(r.retired[:n])
	r.retired = r.retired[n:]
	n = 0
	for n < len(r.retiredSeries) && r.retiredSeries[n].after < oldest {
		h.freeSeries(r.retiredSeries[n].series)
		n++
	}
	clear(r.retiredSeries[:n])
	r.retiredSeries = r.retiredSeries[n:]
}

// waitForReaders returns once no reader that started before the call and
// reads time up to maxt is running.
func (h *Head) waitForReaders(maxt int64) {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.next
	for {
		busy := false
		for id, from := range r.active {
			if id <= last && from <= maxt {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		r.done.Wait()
	}
}

// retireChunks frees the bytes of chunks that left their series once no
// reader that started before they left runs, and returns the bytes of
// arena memory freed at once (none if a reader holds them back).
func (h *Head) retireChunks(chunks [][]byte) int64 {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.oldestID() > r.next {
		var freed int64
		for _, data := range chunks {
			freed += h.arena.release(data)
		}
		return freed
	}
	for _, data := range chunks {
		r.retired = append(r.retired, retiredChunk{data: data, after: r.next})
	}
	return 0
}

// retireSeries frees removed series, their label ids with them, once no
// reader that started before they were removed runs. No appender may
// hold them any more.
func (h *Head) retireSeries(series []*memSeries) {
	r := &h.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.oldestID() > r.next {
		h.freeSeries(series)
		return
	}
	r.retiredSeries = append(r.retiredSeries, retiredSeries{series: series, after: r.next})
}

// freeSeries releases the label ids of removed series and frees their
// memory. Nobody may read them any more.
func (h *Head) freeSeries(series []*memSeries) {
	syms := make([]symIDs, len(series))
	for i, s := range series {
		syms[i] = s.syms
	}
	h.series.symbols.release(syms)
	for _, s := range series {
		h.series.cells.free((*byte)(unsafe.Pointer(s)))
	}
}

// oldestID returns the id of the oldest running reader, math.MaxUint64 if
// none runs. mu must be held.
func (r *readers) oldestID() uint64 {
	oldest := uint64(math.MaxUint64)
	for id := range r.active {
		oldest = min(oldest, id)
	}
	return oldest
}
