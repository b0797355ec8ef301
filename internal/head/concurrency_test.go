package head

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// TestConcurrentAppendAndQuery runs writers creating and appending to
// shared series while readers query; run with -race. Every committed sample
// must be readable afterwards and after replay.
func TestConcurrentAppendAndQuery(t *testing.T) {
	dir := t.TempDir()
	h := openTestHead(t, dir)
	const writers, series, batches = 4, 20, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				app := h.Appender(context.Background())
				for s := range series {
					// Each writer owns a distinct "w" label value, so all
					// its appends are in order, but series creation races
					// on the shared __name__/s postings.
					lset := labels.FromStrings("__name__", "m", "s", fmt.Sprint(s), "w", fmt.Sprint(w))
					if _, err := app.Append(0, lset, storage.Sample{T: int64(b), V: float64(b)}); err != nil {
						t.Error(err)
					}
				}
				if err := app.Commit(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			q, _ := h.Querier(math.MinInt64, math.MaxInt64)
			ss := q.Select(context.Background(), true, nil, all)
			for ss.Next() {
				it := ss.At().Iterator(nil)
				for it.Next() != 0 {
				}
			}
		}
	}()
	wg.Wait()
	<-done

	check := func(h *Head) {
		got := readAll(t, h, math.MinInt64, math.MaxInt64, all)
		if len(got) != writers*series {
			t.Fatalf("got %d series, want %d", len(got), writers*series)
		}
		for k, s := range got {
			if len(s) != batches {
				t.Fatalf("series %s has %d samples, want %d", k, len(s), batches)
			}
		}
	}
	check(h)
	h.Close()
	h2 := openTestHead(t, dir)
	defer h2.Close()
	check(h2)
}
