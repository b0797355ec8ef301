package api

import (
	"context"
	"fmt"
)

// gate bounds how many queries are evaluated at once. A query over the
// bound waits for a slot, as a dashboard's burst of panels would in
// Prometheus; once as many are waiting as may run, more are refused at
// once with 503, so that an overloaded server sheds queries instead of
// holding an ever longer queue of them in memory. A nil gate admits all.
type gate struct {
	running chan struct{}
	waiting chan struct{}
}

func newGate(n int) *gate {
	if n <= 0 {
		return nil
	}
	return &gate{running: make(chan struct{}, n), waiting: make(chan struct{}, n)}
}

// enter takes a slot, waiting for one while ctx allows, and returns the
// function that gives it back.
func (g *gate) enter(ctx context.Context) (leave func(), aerr *apiError) {
	if g == nil {
		return func() {}, nil
	}
	leave = func() { <-g.running }
	select {
	case g.running <- struct{}{}:
		return leave, nil
	default:
	}
	select {
	case g.waiting <- struct{}{}:
		defer func() { <-g.waiting }()
	default:
		return nil, &apiError{typ: errorUnavailable, err: fmt.Errorf("too many concurrent queries: %d running and %d waiting; try again later", cap(g.running), cap(g.waiting))}
	}
	select {
	case g.running <- struct{}{}:
		return leave, nil
	case <-ctx.Done():
		return nil, classify(fmt.Errorf("waiting for a query slot: %w", ctx.Err()))
	}
}
