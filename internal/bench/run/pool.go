package run

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/bench/workload"
)

// arenaChunk is the size of the blocks pre-encoded bodies are packed into:
// large enough that a pool of a gigabyte is a few hundred allocations
// (nothing for the GC to scan: bodies hold no pointers), small enough that
// a worker's last, partly used chunk wastes little.
const arenaChunk = 8 << 20

// arena packs byte slices into large blocks.
type arena struct{ buf []byte }

func (a *arena) copy(b []byte) []byte {
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// span is a range of request sequence numbers [from, to) of one sender.
type span struct{ from, to int64 }

// empty reports whether no span holds a request.
func empty(spans []span) bool {
	for _, s := range spans {
		if s.to > s.from {
			return false
		}
	}
	return true
}

// encodePool encodes the given requests of each sender on all cores and
// returns them per sender, in order. It is the untimed part of a run.
func encodePool(ctx context.Context, sched *workload.Schedule, p workload.Protocol, spans []span) ([][]request, int64, error) {
	pools := make([][]request, len(spans))
	type job struct {
		c int
		q int64
	}
	var jobs []job
	for c, s := range spans {
		pools[c] = make([]request, s.to-s.from)
		for q := s.from; q < s.to; q++ {
			jobs = append(jobs, job{c, q})
		}
	}
	var (
		next  atomic.Int64
		bytes atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			enc := workload.NewEncoder(sched, p)
			var (
				scratch []byte
				a       arena
			)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(jobs)) || ctx.Err() != nil {
					return
				}
				j := jobs[i]
				body, info, err := enc.Append(scratch[:0], j.c, j.q)
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				scratch = body
				pools[j.c][j.q-spans[j.c].from] = request{body: a.copy(body), round: info.Round, samples: info.Samples}
				bytes.Add(int64(len(body)))
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, 0, first
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return pools, bytes.Load(), nil
}
