package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// PollInterval is how often readiness and data checks are retried. It is
// the resolution of a measured time to ready; each poll is one tiny HTTP
// request, too little to slow down a replaying server.
const PollInterval = 10 * time.Millisecond

// ErrGone is returned by Poll when the gone channel closes first.
var ErrGone = errors.New("server went away")

// Poll calls check every PollInterval until it returns true, ctx ends or
// gone is closed (the server process exited; nil if unknown). It returns
// check's last error along with ctx's.
func Poll(ctx context.Context, gone <-chan struct{}, check func(context.Context) (bool, error)) error {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			// An attempt cut short by the deadline says nothing new.
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-gone:
			return ErrGone
		case <-t.C:
		}
	}
}

// Ready returns a check that url answers 200.
func Ready(hc *http.Client, url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		return true, nil
	}
}

func nan() float64 { return math.NaN() }
