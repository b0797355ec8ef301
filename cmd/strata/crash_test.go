package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// TestCrashUnderWriteLoad kills the server with SIGKILL at random moments
// while writers are sending, restarts it, and checks that every sample
// whose request was acknowledged (204) is there. Samples of requests in
// flight at the kill may or may not be there; nothing else may be. A
// batch is a second of data and blocks are a minute: every restart
// writes the older minutes to blocks while the writers send, so kills
// also land during compactions.
func TestCrashUnderWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	crashUnderLoad(t, 4, []string{"--storage.block-duration", "1m"}, crashBatch).wantBlocks()
}

// TestCrashUnderCheckpoints is TestCrashUnderWriteLoad with a checkpoint
// every 16 KiB of log and no block cut: each run writes a full
// checkpoint (the first after a start is one) and then deltas, so kills
// land while they are written and restarts read chains of them.
func TestCrashUnderCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	// Ten times the series, of which the first tenth are checked, so
	// that each run writes several checkpoints.
	// Most restarts read a delta: with eight, all missing one is a chance
	// in thousands.
	c := crashUnderLoad(t, 8, []string{"--wal.checkpoint-bytes", "16384"}, func(w, series, b int) *prompb.WriteRequest {
		return crashBatch(w, 10*series, b)
	})
	t.Logf("%d runs wrote %d deltas; %d restarts read some", c.runs, c.deltasWritten, c.deltaRestarts)
	if c.deltasWritten < c.runs {
		t.Errorf("%d runs wrote %d delta checkpoints, want as many at least", c.runs, c.deltasWritten)
	}
	if c.deltaRestarts == 0 {
		t.Errorf("no restart of %d read a delta checkpoint", c.runs-1)
	}
}

// TestCrashUnderLateWriteLoad is TestCrashUnderWriteLoad with late
// samples: one writer's batches go forward from 2000 s, another's back
// in time from there, each sample older than its series' newest, and
// the third's forward from 0, far behind the newest sample. With blocks
// of a minute, the last two write to ranges already in blocks, and the
// first writes a range every minute of data, so kills land while late
// samples are taken, written to blocks of their own and merged.
func TestCrashUnderLateWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	crashUnderLoad(t, 4, []string{"--storage.block-duration", "1m", "--storage.out-of-order-window", "1h"}, func(w, series, b int) *prompb.WriteRequest {
		req := crashBatch(w, series, b)
		for i := range req.Timeseries {
			switch w {
			case 1:
				req.Timeseries[i].Samples[0].Timestamp = int64(2000-b) * 1000
			case 2:
				req.Timeseries[i].Samples[0].Timestamp = int64(2000+b) * 1000
			}
		}
		return req
	}).wantBlocks()
}

// crashRun is what crashUnderLoad saw: the server's runs, killed, the
// delta checkpoints they wrote, and the restarts that read some.
type crashRun struct {
	s                                  *proc
	runs, deltasWritten, deltaRestarts int
}

// wantBlocks checks that the restarts compacted: some of what was
// checked came from blocks.
func (c crashRun) wantBlocks() {
	c.s.t.Helper()
	if out, err := exec.Command(c.s.bin, "tsdb", "list", "--data-dir", c.s.dir).CombinedOutput(); err != nil || strings.Count(string(out), "\n") < 2 {
		c.s.t.Errorf("no blocks were written: %v\n%s", err, out)
	}
}

// crashUnderLoad runs the server with args under writers sending batches
// made by batch, kills it at random moments, rounds times, and checks
// what survived each time.
func crashUnderLoad(t *testing.T, rounds int, args []string, batch func(w, series, b int) *prompb.WriteRequest) crashRun {
	s := &proc{t: t, bin: buildBinary(t), dir: t.TempDir(), addr: freeAddr(t), args: args}
	s.start()

	const (
		writers = 3
		series  = 20 // per writer
	)
	// acked[w] is the number of batches writer w has had acknowledged;
	// batch b of writer w holds sample b (timestamp b*1000, value b) of
	// each of its series.
	acked := make([]atomic.Int64, writers)
	rng := rand.New(rand.NewPCG(1, 2))
	c := crashRun{s: s}
	for round := range rounds {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := int(acked[w].Load()); ; b++ {
					select {
					case <-stop:
						return
					default:
					}
					code, err := s.tryWrite(batch(w, series, b))
					for err == nil && code == http.StatusServiceUnavailable {
						// A late sample's range is being written to a
						// block: send again, as a sender does.
						time.Sleep(5 * time.Millisecond)
						code, err = s.tryWrite(batch(w, series, b))
					}
					if err != nil || code != http.StatusNoContent {
						// The server is gone (or refused): this batch is
						// not acknowledged, stop writing.
						return
					}
					acked[w].Store(int64(b + 1))
				}
			}()
		}
		// Kill after a random number of acknowledged batches, while the
		// writers are still sending.
		target := 100 + rng.IntN(100)
		deadline := time.Now().Add(30 * time.Second)
		for total(acked) < int64(target*(round+1)) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		s.kill()
		c.count(s.logs.String())
		close(stop)
		wg.Wait()
		t.Logf("round %d: killed with %d batches acknowledged in all", round, total(acked))
		s.start()

		for w := range writers {
			for i := range series {
				got := s.countSamples(fmt.Sprintf(`crash_test{w="%d",s="%d"}`, w, i))
				n := int(acked[w].Load())
				if got < n {
					t.Fatalf("round %d: writer %d series %d has %d samples, %d were acknowledged", round, w, i, got, n)
				}
				if got > n+1 {
					t.Fatalf("round %d: writer %d series %d has %d samples, at most %d were sent", round, w, i, got, n+1)
				}
			}
			// A batch in flight at the kill may have landed: continue
			// after it so that timestamps keep increasing.
			acked[w].Store(int64(s.countSamples(fmt.Sprintf(`crash_test{w="%d",s="0"}`, w))))
		}
	}
	s.kill()
	c.count(s.logs.String())
	return c
}

// deltasReplayed finds the count of delta checkpoints in the log line of
// a replay.
var deltasReplayed = regexp.MustCompile(`msg="WAL replayed" .* deltas=(\d+)`)

// count adds a run's log to what c saw.
func (c *crashRun) count(log string) {
	c.runs++
	c.deltasWritten += strings.Count(log, "full=false")
	if m := deltasReplayed.FindStringSubmatch(log); m != nil && m[1] != "0" {
		c.deltaRestarts++
	}
}

func total(xs []atomic.Int64) (n int64) {
	for i := range xs {
		n += xs[i].Load()
	}
	return n
}

func crashBatch(w, series, b int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{}
	for i := range series {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels: []prompb.Label{
				{Name: "__name__", Value: "crash_test"},
				{Name: "s", Value: strconv.Itoa(i)},
				{Name: "w", Value: strconv.Itoa(w)},
			},
			Samples: []prompb.Sample{{Timestamp: int64(b) * 1000, Value: float64(b)}},
		})
	}
	return req
}

// countSamples returns how many samples the series has, through PromQL.
func (s *proc) countSamples(selector string) int {
	s.t.Helper()
	code, body := s.get("/api/v1/query", url.Values{
		"query": {fmt.Sprintf("count_over_time(%s[1d])", selector)},
		"time":  {"86399"},
	})
	if code != http.StatusOK {
		s.t.Fatalf("query %s: %d %s", selector, code, body)
	}
	var resp struct {
		Data vectorResult `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		s.t.Fatal(err)
	}
	if len(resp.Data.Result) == 0 {
		return 0
	}
	n, err := strconv.Atoi(resp.Data.Result[0].Value[1].(string))
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}
