package run

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/proc"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/stats"
	"github.com/strata-db/strata/internal/bench/workload"
)

// IngestOptions configure the ingest workload.
type IngestOptions struct {
	Workload workload.Options
	Protocol workload.Protocol
	// Duration bounds the timed sending; Requests, if not 0, is instead
	// the total number of requests to send.
	Duration time.Duration
	Requests int64
	// Since, if not 0, starts the timestamps that long before now instead
	// of at now, for a history pushed in time order as fast as the server
	// takes it (a server such as Prometheus refuses samples from the
	// future): with Requests, choose both so that the data ends before
	// now.
	Since time.Duration
	// PoolBytes bounds the memory of pre-encoded requests. A run that
	// needs more is split into phases: the clock stops while the next
	// phase is encoded.
	PoolBytes int64
}

// DefaultIngestOptions returns the options of a full run.
func DefaultIngestOptions() IngestOptions {
	return IngestOptions{
		Workload: workload.DefaultOptions(),
		Protocol: workload.V1,
		// A minute spans several of the servers' periodic jobs (GC
		// cycles, WAL segment cuts, VictoriaMetrics' one-second flushes)
		// and is short enough to repeat.
		Duration: time.Minute,
		// At about 29 bytes a sample (remote-write 1.0, one sample per
		// series) a gigabyte holds 37 million samples, a minute at over
		// 600,000 samples/s, and leaves most of a 24 GiB machine to the
		// server.
		PoolBytes: 1 << 30,
	}
}

// QuickIngestOptions returns the options of a smoke run that takes a few
// seconds.
func QuickIngestOptions() IngestOptions {
	o := DefaultIngestOptions()
	o.Workload.Series = 2000
	o.Workload.SeriesPerRequest = 500
	o.Workload.Senders = 2
	o.Duration = 3 * time.Second
	// Three seconds at up to a million samples/s of 29 bytes, so that a
	// quick run is one phase; it encodes in about a second.
	o.PoolBytes = 96 << 20
	return o
}

// Ingest measures how fast a server accepts remote-write requests.
type Ingest struct {
	opts  IngestOptions
	sched *workload.Schedule
	// quota is each sender's request budget (-1: until the time is up).
	quota []int64
	// phaseRounds is how many rounds one pool phase holds.
	phaseRounds int64
	// first is the first phase's pool, encoded once by Prepare and sent
	// to every server.
	first      [][]request
	firstBytes int64
	encodeTime time.Duration
}

// NewIngest validates o and returns the workload.
func NewIngest(o IngestOptions) (*Ingest, error) {
	if o.Duration <= 0 && o.Requests <= 0 {
		return nil, fmt.Errorf("ingest needs a positive --duration or --requests")
	}
	if o.Since < 0 {
		return nil, fmt.Errorf("--since %v is negative", o.Since)
	}
	if o.PoolBytes <= 0 {
		return nil, fmt.Errorf("pool size must be positive")
	}
	if err := o.Workload.Validate(); err != nil {
		return nil, err
	}
	return &Ingest{opts: o}, nil
}

func (w *Ingest) Name() string { return "ingest" }

func (w *Ingest) Params() []report.Param {
	o := w.opts
	wo := o.Workload
	p := []report.Param{
		{Name: "protocol", Value: "remote-write " + string(o.Protocol)},
		{Name: "series", Value: strconv.Itoa(wo.Series)},
		{Name: "labels per series", Value: strconv.Itoa(wo.Labels) + " (plus __name__)"},
		{Name: "samples per series per request", Value: strconv.Itoa(wo.SamplesPerSeries)},
		{Name: "series per request", Value: strconv.Itoa(wo.SeriesPerRequest)},
		{Name: "concurrency", Value: strconv.Itoa(wo.Senders)},
	}
	if o.Requests > 0 {
		p = append(p, report.Param{Name: "requests", Value: strconv.FormatInt(o.Requests, 10)})
	} else {
		p = append(p, report.Param{Name: "duration", Value: o.Duration.String()})
	}
	churn := "none"
	if wo.Churn > 0 && wo.ChurnEvery > 0 {
		churn = fmt.Sprintf("%g of each sender's series every %d of its requests", wo.Churn, wo.ChurnEvery)
	}
	return append(p,
		report.Param{Name: "churn", Value: churn},
		report.Param{Name: "sample interval", Value: (time.Duration(wo.Interval) * time.Millisecond).String()},
		report.Param{Name: "values", Value: string(cmp.Or(wo.Values, workload.ValuesNode))},
		report.Param{Name: "seed", Value: strconv.FormatUint(wo.Seed, 10)},
		report.Param{Name: "pre-encoded pool", Value: fmt.Sprintf("up to %d MiB", o.PoolBytes>>20)},
	)
}

func (w *Ingest) Chart() report.Chart {
	return report.Chart{Title: "Remote-write samples accepted per second", Keys: []string{"samples_per_second"}}
}

// Prepare builds the schedule and encodes the first phase's requests.
// Timestamps start now, so that every server accepts them as fresh; a
// second run against the same running server writes later timestamps
// (and, with a new seed, new series).
func (w *Ingest) Prepare(ctx context.Context, env *Env) error {
	wo := w.opts.Workload
	wo.Start = time.Now().Add(-w.opts.Since).UnixMilli() / wo.Interval * wo.Interval
	sched, err := workload.NewSchedule(wo)
	if err != nil {
		return err
	}
	w.sched = sched
	n := sched.Senders()
	w.quota = make([]int64, n)
	for c := range n {
		w.quota[c] = -1
		if w.opts.Requests > 0 {
			w.quota[c] = w.opts.Requests / int64(n)
			if int64(c) < w.opts.Requests%int64(n) {
				w.quota[c]++
			}
		}
	}
	// Size a phase in whole rounds from one request per sender: requests
	// of a schedule differ only in label values and samples, so their
	// sizes are close.
	sizes, _, err := encodePool(ctx, sched, w.opts.Protocol, w.spans(0, 1))
	if err != nil {
		return err
	}
	var perRound int64
	for c, reqs := range sizes {
		if len(reqs) > 0 {
			perRound += int64(len(reqs[0].body)) * int64(sched.BatchesPerRound(c))
		}
	}
	w.phaseRounds = max(1, w.opts.PoolBytes/max(perRound, 1))
	spans := w.spans(0, w.phaseRounds)
	var count int64
	for _, s := range spans {
		count += s.to - s.from
	}
	env.logf("ingest: encoding %d requests (up to %d MiB) before the timed run", count, w.opts.PoolBytes>>20)
	start := time.Now()
	w.first, w.firstBytes, err = encodePool(ctx, sched, w.opts.Protocol, spans)
	w.encodeTime = time.Since(start)
	if err != nil {
		return fmt.Errorf("encode requests: %w", err)
	}
	env.logf("ingest: encoded %.1f MiB in %v", float64(w.firstBytes)/(1<<20), w.encodeTime.Round(time.Millisecond))
	return nil
}

// spans returns each sender's requests of rounds [r0, r1), cut to its
// quota.
func (w *Ingest) spans(r0, r1 int64) []span {
	out := make([]span, w.sched.Senders())
	for c := range out {
		nb := int64(w.sched.BatchesPerRound(c))
		s := span{from: r0 * nb, to: r1 * nb}
		if q := w.quota[c]; q >= 0 {
			s.from, s.to = min(s.from, q), min(s.to, q)
		}
		out[c] = s
	}
	return out
}

func (w *Ingest) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	srv, err := open(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(srv.dataDir)
	defer srv.kill() // a no-op after a clean stop

	writer, err := client.NewWriter(srv.writeURL, w.opts.Protocol, srv.http)
	if err != nil {
		return nil, nil, err
	}
	defer writer.Close()
	lim := newLimiter(w.sched.Senders(), w.sched)
	var (
		total   tally
		timed   time.Duration
		phases  int
		cpu0    time.Duration
		started = time.Now()
		self    time.Duration // harness CPU while sending
	)
	if srv.measured() {
		if cpu0, err = srv.cpu(); err != nil {
			return nil, nil, fmt.Errorf("read server CPU: %w", err)
		}
	}
	env.logf("ingest: sending to %s", srv.writeURL)
	for r0 := int64(0); ; r0 += w.phaseRounds {
		pool := w.first
		if r0 > 0 {
			spans := w.spans(r0, r0+w.phaseRounds)
			if empty(spans) {
				break
			}
			env.logf("ingest: clock stopped, encoding phase %d", phases+1)
			if pool, _, err = encodePool(ctx, w.sched, w.opts.Protocol, spans); err != nil {
				return nil, nil, fmt.Errorf("encode requests: %w", err)
			}
		}
		var deadline time.Time
		if w.opts.Requests == 0 {
			deadline = time.Now().Add(w.opts.Duration - timed)
		}
		phases++
		self0 := selfCPU()
		got, elapsed, err := send(ctx, srv, writer, newPoolSource(pool), lim, w.sched.Senders(), deadline)
		self += selfCPU() - self0
		timed += elapsed
		total.merge(&got)
		if err != nil {
			return nil, nil, err
		}
		if w.opts.Requests == 0 && timed >= w.opts.Duration {
			break
		}
		if got.requests == 0 || got.samplesAccepted == 0 {
			// Nothing more to send, or a server that refuses everything
			// (a protocol it does not speak): more phases would only
			// repeat the same errors.
			break
		}
	}
	wall := time.Since(started)

	var figs report.Figures
	secs := timed.Seconds()
	figs.Add("samples_per_second", "samples/s accepted", "samples/s", report.Higher, float64(total.samplesAccepted)/secs)
	lat := stats.Summarize(total.latencies)
	figs.Add("latency_p50", "request latency p50", "ms", report.Lower, ms(lat.P50))
	figs.Add("latency_p99", "request latency p99", "ms", report.Lower, ms(lat.P99))
	figs.Add("latency_max", "request latency max", "ms", report.Lower, ms(lat.Max))
	figs.Add("errors", "failed requests", "requests", report.Lower, float64(total.failed()))
	for _, k := range sortedKeys(total.errors) {
		figs.Add("errors_"+strings.ReplaceAll(strings.ToLower(k), " ", "_"), "failed requests ("+k+")", "requests", report.Lower, float64(total.errors[k]))
	}
	if srv.measured() {
		cpu1, err := srv.cpu()
		if err != nil {
			return nil, nil, fmt.Errorf("read server CPU: %w", err)
		}
		cpu := (cpu1 - cpu0).Seconds()
		if total.samplesAccepted > 0 {
			figs.Add("cpu_per_million", "server CPU per million samples", "CPU s", report.Lower, cpu/float64(total.samplesAccepted)*1e6)
		}
		figs.Add("cpu_cores", "server CPU in use", "cores", report.Neither, cpu/wall.Seconds())
		if peak, err := srv.peakRSS(); err == nil {
			figs.Add("peak_rss", "server peak RSS", "MiB", report.Lower, mib(peak))
		}
		// Without churn every series is still written to: RSS per series
		// is per active series.
		perSeries := w.opts.Workload.Churn == 0
		if m, err := proc.ReadTreeMemory(srv.pid); err == nil {
			figs.Add("end_rss", "server RSS at the end", "MiB", report.Lower, mib(m.RSS))
			if perSeries {
				figs.Add("end_rss_per_series", "server RSS at the end per series", "KiB", report.Lower, float64(m.RSS)/1024/float64(w.opts.Workload.Series))
			}
		}
		// RSS at one moment depends on where the server is in its cycles
		// of garbage collection, chunk cuts and merges; its mean over the
		// second half of the run, once every series exists, does not.
		if mean, ok := srv.meanRSS(started.Add(wall/2), time.Now()); ok {
			figs.Add("mean_rss", "server mean RSS, second half", "MiB", report.Lower, mib(mean))
			if perSeries {
				figs.Add("mean_rss_per_series", "server mean RSS per series, second half", "KiB", report.Lower, float64(mean)/1024/float64(w.opts.Workload.Series))
			}
		}
	}
	// The harness shares the machine: its own CPU use says how much of it
	// the server did not have.
	figs.Add("harness_cpu_cores", "harness CPU in use while sending", "cores", report.Neither, self.Seconds()/secs)
	figs.Add("requests", "requests sent", "requests", report.Neither, float64(total.requests))
	figs.Add("samples_sent", "samples sent", "samples", report.Neither, float64(total.samplesSent))
	figs.Add("samples_accepted", "samples accepted", "samples", report.Neither, float64(total.samplesAccepted))
	if total.samplesSent > 0 {
		figs.Add("wire_bytes_per_sample", "request bytes per sample (as sent)", "B/sample", report.Neither, float64(total.bytesSent)/float64(total.samplesSent))
	}
	figs.Add("timed_seconds", "timed window", "s", report.Neither, secs)

	notes := total.errorSummary()
	if phases > 1 {
		notes = append(notes, fmt.Sprintf("the pre-encoded pool held %d rounds; the run took %d phases with the clock stopped while each was encoded (raise --pool-bytes to avoid the pauses)", w.phaseRounds, phases))
	}
	if !srv.measured() {
		notes = append(notes, "server CPU and memory not measured: launch it with --server-cmd or give its --pid")
	}
	if err := srv.stop(env); err != nil {
		notes = append(notes, "stop: "+err.Error())
	}
	return figs, notes, nil
}
