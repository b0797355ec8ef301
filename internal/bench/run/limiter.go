package run

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/bench/workload"
)

// limiter keeps senders within maxAhead rounds of each other.
//
// Prometheus rejects samples more than an hour older than the newest
// sample it holds (half its block range), whatever their series, so
// senders that drift apart in data time would make it reject the slow
// ones' samples. A sender waits before starting a round more than maxAhead
// rounds past the slowest sender. All fields are guarded by mu.
type limiter struct {
	mu       sync.Mutex
	cond     *sync.Cond
	at       []int64 // round each sender is at; math.MaxInt64 when idle
	maxAhead int64
}

// maxDrift is how far apart in data time senders may get: half of the
// hour Prometheus tolerates, leaving room for requests in flight.
const maxDrift = 30 * time.Minute

func newLimiter(senders int, sched *workload.Schedule) *limiter {
	o := sched.Options()
	roundSpan := int64(o.SamplesPerSeries) * o.Interval
	l := &limiter{at: make([]int64, senders), maxAhead: max(1, maxDrift.Milliseconds()/roundSpan)}
	l.cond = sync.NewCond(&l.mu)
	for i := range l.at {
		l.at[i] = math.MaxInt64
	}
	return l
}

// wait blocks until sender c may send a request of round r, or ctx ends.
func (l *limiter) wait(ctx context.Context, c int, r int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at[c] != r {
		l.at[c] = r
		l.cond.Broadcast()
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if slices.Min(l.at) >= r-l.maxAhead {
			return nil
		}
		l.cond.Wait()
	}
}

// idle marks sender c as not sending, so nobody waits for it.
func (l *limiter) idle(c int) {
	l.mu.Lock()
	l.at[c] = math.MaxInt64
	l.cond.Broadcast()
	l.mu.Unlock()
}

// wake wakes every waiter to check its context again; call it when a
// context a waiter may use ends.
func (l *limiter) wake() {
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
}
