package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/bench/disk"
	"github.com/strata-db/strata/internal/bench/report"
)

// DiskOptions configure the disk workload.
type DiskOptions struct {
	Load LoadOptions
}

// DefaultDiskOptions load the same data set as a replay.
func DefaultDiskOptions() DiskOptions { return DiskOptions{Load: DefaultReplayOptions().Load} }

// QuickDiskOptions load the quick replay's data set.
func QuickDiskOptions() DiskOptions { return DiskOptions{Load: QuickReplayOptions().Load} }

// Disk measures the bytes a server keeps on disk per sample: it loads a
// data set, stops the server with SIGTERM, which makes every server
// persist what it buffers in memory (VictoriaMetrics holds the last
// seconds of samples in memory), and measures its data directory.
type Disk struct{ opts DiskOptions }

// NewDisk validates o and returns the workload.
func NewDisk(o DiskOptions) (*Disk, error) {
	if err := o.Load.Validate(); err != nil {
		return nil, err
	}
	return &Disk{opts: o}, nil
}

func (w *Disk) Name() string                        { return "disk" }
func (w *Disk) Params() []report.Param              { return w.opts.Load.params() }
func (w *Disk) Prepare(context.Context, *Env) error { return nil }

func (w *Disk) Chart() report.Chart {
	return report.Chart{Title: "Bytes on disk per sample", Keys: []string{"bytes_per_sample", "wal_bytes_per_sample", "other_bytes_per_sample"}}
}

func (w *Disk) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	if !t.Launched() {
		return nil, nil, errors.New("disk measures the server's data directory: give it --server-cmd, not --url")
	}
	srv, err := open(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(srv.dataDir)
	defer srv.kill()
	ld, err := load(ctx, env, srv, w.opts.Load)
	if err != nil {
		return nil, nil, err
	}
	live, err := disk.Measure(srv.dataDir)
	if err != nil {
		return nil, nil, err
	}
	env.logf("disk: stopping %s with SIGTERM so that it persists everything", t.Name)
	var notes []string
	if err := srv.stop(env); err != nil {
		notes = append(notes, "stop: "+err.Error())
	}
	u, err := disk.Measure(srv.dataDir)
	if err != nil {
		return nil, nil, err
	}
	n := float64(ld.opts.samples())
	var figs report.Figures
	figs.Add("bytes_per_sample", "data directory per sample", "B/sample", report.Lower, float64(u.Total.Allocated)/n)
	figs.Add("wal_bytes_per_sample", "write-ahead log per sample", "B/sample", report.Lower, float64(u.WAL.Allocated)/n)
	figs.Add("other_bytes_per_sample", "rest of the data directory per sample", "B/sample", report.Lower, float64(u.Other.Allocated)/n)
	figs.Add("apparent_bytes_per_sample", "file lengths per sample", "B/sample", report.Lower, float64(u.Total.Apparent)/n)
	figs.Add("data_dir", "data directory", "MiB", report.Lower, mib(u.Total.Allocated))
	figs.Add("data_dir_running", "data directory before stopping", "MiB", report.Neither, mib(live.Total.Allocated))
	figs.Add("files", "files", "files", report.Neither, float64(u.Total.Files))
	figs.Add("samples_loaded", "samples loaded", "samples", report.Neither, n)
	if u.WAL.Files == 0 {
		notes = append(notes, "no wal* directory: everything counts as other")
	}
	if u.Total.Allocated == 0 {
		notes = append(notes, fmt.Sprintf("the data directory %s is empty: does the command pass {data} to the server?", srv.dataDir))
	}
	return figs, notes, nil
}
