package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/workload"
)

// LoadOptions describe a fixed data set that a workload writes before it
// measures something else: Series series (Workload.Series) with
// SamplesPerSeries samples each, ending shortly before now.
type LoadOptions struct {
	Workload         workload.Options
	Protocol         workload.Protocol
	SamplesPerSeries int64
}

// Validate reports the first problem with o.
func (o LoadOptions) Validate() error {
	if o.SamplesPerSeries < 1 {
		return errors.New("samples per series must be at least 1")
	}
	return o.Workload.Validate()
}

// rounds returns how many rounds carry SamplesPerSeries samples of each
// series (the last may carry a few more, a whole request's worth).
func (o LoadOptions) rounds() int64 {
	s := int64(o.Workload.SamplesPerSeries)
	return (o.SamplesPerSeries + s - 1) / s
}

// perSeries returns the samples each series really gets.
func (o LoadOptions) perSeries() int64 { return o.rounds() * int64(o.Workload.SamplesPerSeries) }

// samples returns the total samples loaded.
func (o LoadOptions) samples() int64 { return int64(o.Workload.Series) * o.perSeries() }

// loadEndMargin is how long before now the loaded data ends.
// VictoriaMetrics hides the last 30s from queries
// (-search.latencyOffset) and Prometheus' head takes anything recent;
// ten minutes keeps clear of both and of clock steps.
const loadEndMargin = 10 * time.Minute

// schedule returns the load's schedule, with timestamps ending at end
// (or just before: the interval's last multiple). Data further back than
// Prometheus' or VictoriaMetrics' retention would be dropped, so loads
// are kept to days.
func (o LoadOptions) schedule(endAt time.Time) (*workload.Schedule, error) {
	wo := o.Workload
	span := (o.perSeries() - 1) * wo.Interval
	end := endAt.UnixMilli()
	wo.Start = (end - span) / wo.Interval * wo.Interval
	return workload.NewSchedule(wo)
}

// params describe the load for reports.
func (o LoadOptions) params() []report.Param {
	wo := o.Workload
	return []report.Param{
		{Name: "protocol", Value: "remote-write " + string(o.Protocol)},
		{Name: "series", Value: strconv.Itoa(wo.Series)},
		{Name: "samples per series", Value: strconv.FormatInt(o.perSeries(), 10)},
		{Name: "samples", Value: strconv.FormatInt(o.samples(), 10)},
		{Name: "labels per series", Value: strconv.Itoa(wo.Labels) + " (plus __name__)"},
		{Name: "samples per series per request", Value: strconv.Itoa(wo.SamplesPerSeries)},
		{Name: "series per request", Value: strconv.Itoa(wo.SeriesPerRequest)},
		{Name: "concurrency", Value: strconv.Itoa(wo.Senders)},
		{Name: "sample interval", Value: (time.Duration(wo.Interval) * time.Millisecond).String()},
		{Name: "values", Value: string(cmp.Or(wo.Values, workload.ValuesNode))},
		{Name: "seed", Value: strconv.FormatUint(wo.Seed, 10)},
	}
}

// loaded is a data set written to a server.
type loaded struct {
	sched  *workload.Schedule
	opts   LoadOptions
	took   time.Duration
	result tally
}

// start and end are the first and last sample timestamps (ms).
func (l *loaded) start() int64 { return l.sched.Options().Start }
func (l *loaded) end() int64 {
	return l.sched.Timestamp(l.opts.rounds()-1, l.opts.Workload.SamplesPerSeries-1)
}

// load writes the data set, ending loadEndMargin before now, and fails
// unless every sample was accepted: what follows (a replay, a data check,
// a disk measurement) is only meaningful over complete data.
func load(ctx context.Context, env *Env, srv *server, o LoadOptions) (*loaded, error) {
	return loadAt(ctx, env, srv, o, time.Now().Add(-loadEndMargin))
}

// loadAt is load with the data ending at end.
func loadAt(ctx context.Context, env *Env, srv *server, o LoadOptions, end time.Time) (*loaded, error) {
	sched, err := o.schedule(end)
	if err != nil {
		return nil, err
	}
	env.logf("loading %d samples over %d series into %s", o.samples(), o.Workload.Series, srv.name)
	w, err := client.NewWriter(srv.writeURL, o.Protocol, srv.http)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	src := newEncodeSource(sched, o.Protocol, o.rounds())
	got, took, err := send(ctx, srv, w, src, newLimiter(sched.Senders(), sched), sched.Senders(), time.Time{})
	if err != nil {
		return nil, err
	}
	if got.failed() > 0 || got.samplesAccepted != o.samples() {
		msg := fmt.Sprintf("load: %d of %d samples accepted", got.samplesAccepted, o.samples())
		for _, e := range got.errorSummary() {
			msg += "; " + e
		}
		return nil, errors.New(msg)
	}
	env.logf("loaded in %v (%.0f samples/s)", took.Round(time.Millisecond), float64(got.samplesAccepted)/took.Seconds())
	return &loaded{sched: sched, opts: o, took: took, result: got}, nil
}

// maxCheckSamples bounds the samples one check query makes the server
// load: Prometheus and strata refuse queries over 50 million
// (--query.max-samples), so the sample count is summed over windows of at
// most 10 million.
const maxCheckSamples = 10_000_000

// found is what a server returned for a loaded data set.
type found struct {
	series, samples int64
}

// count asks the server how many of the loaded series and samples it has,
// at the time of the last sample, where every series has a sample inside
// any lookback window.
//
// Samples are counted per metric name: count_over_time drops the name, and
// series that differ only in name (receive and transmit bytes of one
// device) would then collide in one result.
func (l *loaded) count(ctx context.Context, api *client.API) (found, error) {
	at := time.UnixMilli(l.end())
	r, err := api.Query(ctx, "count("+workload.Selector+")", at)
	if err != nil {
		return found{}, err
	}
	f := found{series: int64(orZero(r.Value))}
	// Windows (e-d, e] going back from the end, together covering the
	// first sample.
	interval := l.opts.Workload.Interval
	cover := l.end() - l.start() + interval
	windows := max(1, (l.opts.samples()+maxCheckSamples-1)/maxCheckSamples)
	width := (cover + windows - 1) / windows
	for _, name := range workload.MetricNames() {
		for i := range windows {
			e := l.end() - i*width
			q := fmt.Sprintf("sum(count_over_time(%s[%dms]))", name, width)
			r, err := api.Query(ctx, q, time.UnixMilli(e))
			if err != nil {
				return f, err
			}
			f.samples += int64(orZero(r.Value))
		}
	}
	return f, nil
}

func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// visibleTimeout bounds the wait for loaded data to show in queries.
// VictoriaMetrics makes rows searchable after its in-memory buffers are
// flushed, about every second; Prometheus and strata immediately.
const visibleTimeout = 30 * time.Second

// waitVisible polls until the server shows at least all loaded series and
// samples, or visibleTimeout passes, and returns the last count.
func (l *loaded) waitVisible(ctx context.Context, srv *server) (found, error) {
	api := client.NewAPI(srv.queryBase, srv.http)
	ctx, cancel := context.WithTimeout(ctx, visibleTimeout)
	defer cancel()
	var (
		last     found
		answered bool
	)
	err := client.Poll(ctx, srv.gone(), func(ctx context.Context) (bool, error) {
		f, err := l.count(ctx, api)
		if err != nil {
			return false, err
		}
		last, answered = f, true
		return f.series >= int64(l.opts.Workload.Series) && f.samples >= l.opts.samples(), nil
	})
	if errors.Is(err, client.ErrGone) {
		return last, srv.proc.Died()
	}
	if errors.Is(err, context.DeadlineExceeded) && answered {
		// Incomplete but answering: the caller reports the shortfall.
		return last, nil
	}
	return last, err
}
