package run

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/disk"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/workload"
)

// ReplayOptions configure the replay workload.
type ReplayOptions struct {
	Load LoadOptions
}

// DefaultReplayOptions load ten million samples: 100,000 series, 100
// samples each (25 minutes at a 15s interval), a log that takes a
// noticeable time to replay on two cores.
func DefaultReplayOptions() ReplayOptions {
	wo := workload.DefaultOptions()
	return ReplayOptions{Load: LoadOptions{Workload: wo, Protocol: workload.V1, SamplesPerSeries: 100}}
}

// QuickReplayOptions load 200,000 samples.
func QuickReplayOptions() ReplayOptions {
	o := DefaultReplayOptions()
	o.Load.Workload.Series = 2000
	o.Load.Workload.SeriesPerRequest = 500
	o.Load.Workload.Senders = 2
	return o
}

// Replay measures how a server restarts after being killed: it loads a
// data set, kills the server with SIGKILL once every sample is
// acknowledged, restarts it on the same data directory and times its way
// back to ready, then checks that nothing acknowledged was lost.
type Replay struct{ opts ReplayOptions }

// NewReplay validates o and returns the workload.
func NewReplay(o ReplayOptions) (*Replay, error) {
	if err := o.Load.Validate(); err != nil {
		return nil, err
	}
	return &Replay{opts: o}, nil
}

func (w *Replay) Name() string                        { return "replay" }
func (w *Replay) Params() []report.Param              { return w.opts.Load.params() }
func (w *Replay) Prepare(context.Context, *Env) error { return nil }

func (w *Replay) Chart() report.Chart {
	return report.Chart{Title: "Restart after kill -9", Keys: []string{"time_to_ready", "time_to_first_query", "time_to_complete"}}
}

func (w *Replay) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	if !t.Launched() {
		return nil, nil, errors.New("replay kills and restarts the server: give it --server-cmd, not --url")
	}
	dir, log, err := env.newDataDir(t.Name)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(dir)
	srv, err := launch(ctx, env, t, dir, log)
	if err != nil {
		return nil, nil, err
	}
	defer srv.kill()
	ld, err := load(ctx, env, srv, w.opts.Load)
	if err != nil {
		return nil, nil, err
	}
	before, err := disk.Measure(dir)
	if err != nil {
		return nil, nil, err
	}
	env.logf("replay: killing %s (pid %d) with SIGKILL", t.Name, srv.pid)
	if err := srv.kill(); err != nil {
		return nil, nil, err
	}

	restartLog := filepath.Join(filepath.Dir(log), "server-restart.log")
	env.logf("replay: restarting %s on the same data directory", t.Name)
	again, err := launch(ctx, env, t, dir, restartLog)
	if err != nil {
		return nil, nil, fmt.Errorf("restart: %w", err)
	}
	defer again.kill()
	// The first query to answer, whatever it finds: a server may be
	// "ready" before it has replayed, or answer before it says ready.
	api := client.NewAPI(again.queryBase, again.http)
	qctx, cancel := context.WithTimeout(ctx, env.ReadyTimeout)
	defer cancel()
	err = client.Poll(qctx, again.gone(), func(ctx context.Context) (bool, error) {
		_, err := api.Query(ctx, "count("+workload.Selector+")", time.UnixMilli(ld.end()))
		return err == nil, err
	})
	if err != nil {
		if errors.Is(err, client.ErrGone) {
			return nil, nil, again.proc.Died()
		}
		return nil, nil, fmt.Errorf("first query after restart: %w", err)
	}
	firstQuery := time.Since(again.started)
	got, err := ld.waitVisible(ctx, again)
	if err != nil {
		return nil, nil, fmt.Errorf("check data after restart: %w", err)
	}
	complete := time.Since(again.started)

	var figs report.Figures
	figs.Add("time_to_ready", "restart: time to ready", "s", report.Lower, again.readyAfter.Seconds())
	figs.Add("time_to_first_query", "restart: time to first query answered", "s", report.Lower, firstQuery.Seconds())
	wantSeries, wantSamples := int64(ld.opts.Workload.Series), ld.opts.samples()
	if got.series == wantSeries && got.samples == wantSamples {
		figs.Add("time_to_complete", "restart: time to all data queryable", "s", report.Lower, complete.Seconds())
	}
	figs.Add("replay_cpu", "restart: CPU until ready", "CPU s", report.Lower, again.readyCPU.Seconds())
	if again.readyPeak > 0 {
		figs.Add("replay_peak_rss", "restart: peak RSS until ready", "MiB", report.Lower, mib(again.readyPeak))
	}
	figs.Add("data_dir_at_kill", "data directory at kill", "MiB", report.Lower, mib(before.Total.Allocated))
	figs.Add("wal_at_kill", "write-ahead log at kill", "MiB", report.Neither, mib(before.WAL.Allocated))
	figs.Add("series_loaded", "series loaded", "series", report.Neither, float64(wantSeries))
	figs.Add("samples_loaded", "samples loaded", "samples", report.Neither, float64(wantSamples))
	figs.Add("series_found", "series found after restart", "series", report.Neither, float64(got.series))
	figs.Add("samples_found", "samples found after restart", "samples", report.Neither, float64(got.samples))
	figs.Add("samples_lost", "acknowledged samples lost", "samples", report.Lower, float64(max(0, wantSamples-got.samples)))

	var notes []string
	if got.series != wantSeries || got.samples != wantSamples {
		notes = append(notes, fmt.Sprintf("after the restart the server has %d series and %d samples of the %d and %d it acknowledged", got.series, got.samples, wantSeries, wantSamples))
	}
	if err := again.stop(env); err != nil {
		notes = append(notes, "stop: "+err.Error())
	}
	return figs, notes, nil
}
