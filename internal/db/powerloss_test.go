package db

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/ingest/remotewrite"
	"github.com/strata-db/strata/internal/vfs/crashfs"
	"github.com/strata-db/strata/internal/wal"
)

var powerCuts = flag.Int("powerloss.cuts", 150, "power cuts TestPowerLoss makes for each sync policy, in runs of cutsPerRun")

// cutsPerRun is how many cuts a store takes before the next run starts
// another: each cut replays all the store holds, which grows.
const cutsPerRun = 50

const (
	plWriters = 3
	plSeries  = 4 // per writer
)

// plRequest is a remote-write request of the power-loss test, the n-th
// of all, sent by writer w: one sample at n*10 ms of value n for each of
// w's series. The writers share n, so that their samples keep close in
// time, as senders scraping together do.
type plRequest struct{ w, n int }

func (r plRequest) body() []byte {
	req := &prompb.WriteRequest{}
	for s := range plSeries {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "pl"}, {Name: "s", Value: fmt.Sprint(s)}, {Name: "w", Value: fmt.Sprint(r.w)}},
			Samples: []prompb.Sample{{Timestamp: int64(r.n) * 10, Value: float64(r.n)}},
		})
	}
	b, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, b)
}

// plStored returns, for each request, how many of its samples the store
// holds; a sample no request sent fails the test.
func plStored(t *testing.T, db *DB) map[plRequest]int {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	got := map[plRequest]int{}
	ss := q.Select(context.Background(), false, nil, matchAll)
	var it promchunkenc.Iterator
	for ss.Next() {
		var w int
		fmt.Sscan(ss.At().Labels().Get("w"), &w)
		it = ss.At().Iterator(it)
		for it.Next() == promchunkenc.ValFloat {
			ts, v := it.At()
			if float64(ts) != v*10 {
				t.Fatalf("%s holds %g at %d, which no request sent", ss.At().Labels(), v, ts)
			}
			got[plRequest{w, int(v)}]++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPowerLoss runs the write path, remote-write requests from
// concurrent senders through the receiver into the head and the WAL,
// with checkpoints, compactions and merges running beside them, on a
// file system that keeps only what was fsynced, and cuts the power at a
// random point, seeded: after each cut the store is opened on what a
// power loss leaves and checked, and the writes go on from there to the
// next cut; after cutsPerRun cuts a new run starts on an empty store
// (-powerloss.cuts cuts in all for each policy).
//
// With --wal.sync=always every acknowledged sample is there after every
// cut. With --wal.sync=never what may be lost is what the operating
// system had not written: the WAL's newest segment since its last fsync
// (the log fsyncs a segment when it moves past it, and checkpoints are
// fsynced); every request acknowledged before the last fsync of a WAL
// segment is there. Under either policy no request is half there, and a
// sample once found after a cut is found after every later one.
//
// The head's chunk files need mapped memory, which this file system
// cannot give, so here chunks stay in memory. Nothing in those files is
// needed after a crash: the store empties them at start and replay
// writes them anew (the kill -9 tests of cmd/strata run with them).
func TestPowerLoss(t *testing.T) {
	for _, policy := range []wal.SyncPolicy{wal.SyncAlways, wal.SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			var st powerLossStats
			for run := 0; run*cutsPerRun < *powerCuts; run++ {
				cuts := min(cutsPerRun, *powerCuts-run*cutsPerRun)
				testPowerLoss(t, policy, cuts, rand.New(rand.NewPCG(uint64(policy), uint64(run))), &st)
			}
			t.Logf("%d power cuts: %d requests sent, %d acknowledged, %d of those lost (not yet fsynced under --wal.sync=%s), %d kept, %d refused as out of bounds or while their range was written to a block",
				*powerCuts, st.sent, st.acked, st.lost, policy, st.kept, st.refused)
		})
	}
}

type powerLossStats struct{ sent, acked, lost, kept, refused int }

// testPowerLoss makes one run of cuts power cuts on a new store.
func testPowerLoss(t *testing.T, policy wal.SyncPolicy, cuts int, rng *rand.Rand, st *powerLossStats) {
	dir := "data"
	tweak := func(fsys *crashfs.FS) func(*Options) {
		return func(o *Options) {
			o.FS = fsys
			o.Head.WAL.Sync = policy
			o.Head.WAL.SegmentSize = 16 << 10
			o.Head.CheckpointMinBytes = 32 << 10
			o.Head.CheckpointOnClose = false
		}
	}
	fsys := crashfs.New()
	db := openTestDB(t, dir, tweak(fsys))
	next := 0 // the next request's n
	sent := map[plRequest]bool{}
	kept := map[plRequest]bool{} // found whole after a cut: durable
	var lost, acked, refused int
	for cut := range cuts {
		h := remotewrite.NewHandler(db, remotewrite.DefaultOptions())
		fsys.CrashAfter(1 + rng.IntN(1500))
		var mu sync.Mutex
		ackedAt := map[plRequest]int{} // fsys.Changes() once acknowledged
		var wg sync.WaitGroup
		n := rng.IntN(60)
		for w := range plWriters {
			wg.Go(func() {
				for range n {
					mu.Lock()
					r := plRequest{w, next}
					next++
					sent[r] = true
					mu.Unlock()
					req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(r.body()))
					req.Header.Set("Content-Type", "application/x-protobuf")
					req.Header.Set("Content-Encoding", "snappy")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					switch {
					case rec.Code == http.StatusNoContent:
						mu.Lock()
						ackedAt[r] = fsys.Changes()
						mu.Unlock()
					case rec.Code == http.StatusBadRequest && bytes.Contains(rec.Body.Bytes(), []byte("out of bounds")),
						rec.Code == http.StatusServiceUnavailable && bytes.Contains(rec.Body.Bytes(), []byte("being written to a block")):
						// A writer held up while the others' samples
						// moved the head past its own: refused whole,
						// or, while its range is written to a block,
						// to be retried.
						mu.Lock()
						refused++
						mu.Unlock()
					case !fsys.Crashed():
						t.Errorf("request %v refused before the cut: %d %s", r, rec.Code, rec.Body)
					}
				}
			})
		}
		stop := make(chan struct{})
		var cwg sync.WaitGroup
		cwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Compact(); err != nil && !fsys.Crashed() {
					t.Errorf("compaction failed before the cut: %v", err)
					return
				}
			}
		})
		wg.Wait()
		close(stop)
		cwg.Wait()
		walSynced := fsys.LastSync(filepath.Join(dir, "wal"))
		after := fsys.Crash()
		db.Close() // errors expected past the cut
		if t.Failed() {
			t.Fatalf("cut %d", cut)
		}

		fsys = after
		db = openTestDB(t, dir, tweak(fsys))
		got := plStored(t, db)
		for r := range sent {
			switch n := got[r]; {
			case n != 0 && n != plSeries:
				t.Errorf("cut %d: request %v half there: %d of %d samples", cut, r, n, plSeries)
			case n == 0 && kept[r]:
				t.Errorf("cut %d: request %v, there after an earlier cut, is gone", cut, r)
			case n == 0:
				at, ok := ackedAt[r]
				if ok && (policy == wal.SyncAlways || at <= walSynced) {
					t.Errorf("cut %d: request %v acknowledged at change %d is lost (WAL last fsynced at %d)", cut, r, at, walSynced)
				}
				if ok {
					lost++
				}
			default:
				kept[r] = true
			}
		}
		acked += len(ackedAt)
		if t.Failed() {
			t.Fatalf("cut %d of seed's run: %d requests sent in all", cut, len(sent))
		}
	}
	db.Close()
	st.sent += len(sent)
	st.acked += acked
	st.lost += lost
	st.kept += len(kept)
	st.refused += refused
}
