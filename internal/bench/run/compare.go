package run

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bench/report"
)

// Workload is one benchmark.
type Workload interface {
	// Name is the subcommand name: ingest, replay, query, disk, rules or
	// scrape.
	Name() string
	// Params describe the workload's settings for reports.
	Params() []report.Param
	// Chart says which figures the chart shows.
	Chart() report.Chart
	// Prepare does work shared by every run, before any: it is not timed.
	Prepare(ctx context.Context, env *Env) error
	// Run runs the workload once against the target and returns its
	// figures and notes for the report.
	Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error)
}

// Compare runs w against each target in turn, rounds times over, in the
// order A, B, C, A, B, C, ... so that slow drifts of a shared machine
// (other jobs, thermal limits, a filling page cache) spread over all
// servers instead of favouring the first. Each figure is the median over
// the rounds.
func Compare(ctx context.Context, env *Env, w Workload, targets []Target, rounds int) (*report.Result, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("no server to run against")
	}
	for _, t := range targets {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	rounds = max(rounds, 1)
	res := &report.Result{
		Workload: w.Name(),
		Started:  time.Now().UTC().Truncate(time.Second),
		Machine:  report.ThisMachine(),
		Params:   w.Params(),
		Chart:    w.Chart(),
	}
	if rounds > 1 {
		res.Params = append(res.Params, report.Param{Name: "rounds", Value: strconv.Itoa(rounds) + " (figures are medians)"})
	}
	defer env.cleanup()
	if err := w.Prepare(ctx, env); err != nil {
		return nil, err
	}
	res.Runs = make([]report.Run, len(targets))
	for i, t := range targets {
		res.Runs[i] = report.Run{Server: t.Name, Target: t.Describe()}
	}
	notes := make([]roundNotes, len(targets))
	for r := range rounds {
		for i, t := range targets {
			env.logf("%s: round %d/%d against %s", w.Name(), r+1, rounds, t.Name)
			figs, ns, err := w.Run(ctx, env, t)
			if err != nil {
				return nil, fmt.Errorf("%s against %s (round %d): %w", w.Name(), t.Name, r+1, err)
			}
			res.Runs[i].Rounds = append(res.Runs[i].Rounds, figs)
			for _, n := range ns {
				notes[i].add(n, r+1)
			}
		}
	}
	for i := range res.Runs {
		res.Runs[i].Figures = report.Median(res.Runs[i].Rounds)
		res.Runs[i].Notes = notes[i].list(rounds)
		if rounds == 1 {
			res.Runs[i].Rounds = nil
		}
	}
	return res, nil
}

// roundNotes collects a server's notes over rounds, each once, with the
// rounds it came up in.
type roundNotes struct {
	order  []string
	rounds map[string][]int
}

func (rn *roundNotes) add(note string, round int) {
	if rn.rounds == nil {
		rn.rounds = map[string][]int{}
	}
	if _, ok := rn.rounds[note]; !ok {
		rn.order = append(rn.order, note)
	}
	rn.rounds[note] = append(rn.rounds[note], round)
}

func (rn *roundNotes) list(rounds int) []string {
	var out []string
	for _, n := range rn.order {
		rs := rn.rounds[n]
		if rounds == 1 || len(rs) == rounds {
			out = append(out, n)
			continue
		}
		ss := make([]string, len(rs))
		for i, r := range rs {
			ss[i] = strconv.Itoa(r)
		}
		out = append(out, "round "+strings.Join(ss, ", ")+": "+n)
	}
	return out
}
