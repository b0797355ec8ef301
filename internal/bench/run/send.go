package run

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
)

// errServerDied stops a send when a launched server exits.
var errServerDied = errors.New("server died")

// send runs one sender per schedule sender until the source runs dry or
// the deadline (zero: none) passes, and returns what they saw and how long
// they took, from release to the last one finishing.
func send(parent context.Context, srv *server, w *client.Writer, src source, lim *limiter, senders int, deadline time.Time) (tally, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopWake := context.AfterFunc(ctx, lim.wake)
	defer stopWake()
	if gone := srv.gone(); gone != nil {
		go func() {
			select {
			case <-gone:
				cancel(errServerDied)
			case <-ctx.Done():
			}
		}()
	}
	tallies := make([]tally, senders)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range senders {
		wg.Go(func() {
			defer lim.idle(c)
			t := &tallies[c]
			for {
				if !deadline.IsZero() && time.Now().After(deadline) {
					return
				}
				r, ok := src.next(c)
				if !ok {
					return
				}
				if err := lim.wait(ctx, c, r.round); err != nil {
					return
				}
				res, err := w.Write(ctx, r.body)
				if ctx.Err() != nil {
					return // cancelled mid-request: not the server's fault
				}
				t.record(r, res, err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var total tally
	for i := range tallies {
		total.merge(&tallies[i])
	}
	if errors.Is(context.Cause(ctx), errServerDied) {
		return total, elapsed, srv.alive()
	}
	return total, elapsed, parent.Err()
}
