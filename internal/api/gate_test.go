package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// blockingQueryable holds every querier until release is closed, telling
// started when one is asked for.
type blockingQueryable struct {
	storage.Queryable
	started chan struct{}
	release chan struct{}
}

func (b *blockingQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	b.started <- struct{}{}
	<-b.release
	return b.Queryable.Querier(mint, maxt)
}

// TestQueryGate checks --query.max-concurrency's bound: with one slot, a
// second query waits for it, a third is refused with 503 at once, a
// waiting query gives up with its timeout, and both admitted queries
// answer once the first is done.
func TestQueryGate(t *testing.T) {
	store := &blockingQueryable{Queryable: fixture(), started: make(chan struct{}, 4), release: make(chan struct{})}
	p := parser.NewParser(parser.Options{})
	opts := DefaultOptions()
	opts.Engine, opts.Queryable, opts.Parser = newTestEngine(p), store, p
	opts.MaxConcurrentQueries = 1
	a := New(opts)
	h := http.NewServeMux()
	a.Register(h)

	target := "/api/v1/query?" + q("query", "up", "time", "300")
	codes := make(chan int, 2)
	go func() { codes <- do(h, http.MethodGet, target, "").Code }()
	<-store.started // the first query runs and holds the slot
	go func() { codes <- do(h, http.MethodGet, target, "").Code }()
	// The second waits; once it does, the queue is full.
	for deadline := time.Now().Add(10 * time.Second); len(a.queries.waiting) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the second query never waited for a slot")
		}
		time.Sleep(time.Millisecond)
	}
	refused := do(h, http.MethodGet, target, "")
	if refused.Code != http.StatusServiceUnavailable || !strings.Contains(refused.Body.String(), "too many concurrent queries") {
		t.Fatalf("third query: %d %s, want 503 naming the bound", refused.Code, refused.Body)
	}
	close(store.release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("admitted query answered %d", code)
		}
	}
	if len(a.queries.running) != 0 || len(a.queries.waiting) != 0 {
		t.Errorf("slots left taken: %d running, %d waiting", len(a.queries.running), len(a.queries.waiting))
	}
}

// TestQueryGateTimeout checks that a query waiting for a slot gives up
// when its timeout passes, with the timeout's 503.
func TestQueryGateTimeout(t *testing.T) {
	g := newGate(1)
	leave, aerr := g.enter(context.Background())
	if aerr != nil {
		t.Fatal(aerr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, aerr := g.enter(ctx); aerr == nil || aerr.typ != errorTimeout {
		t.Fatalf("waiting past the timeout: %v, want a timeout", aerr)
	}
	leave()
	if leave, aerr := g.enter(context.Background()); aerr != nil {
		t.Fatalf("after the slot was given back: %v", aerr)
	} else {
		leave()
	}
}
