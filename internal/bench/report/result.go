// Package report holds the results of a benchmark run and renders them: a
// plain-text table for the terminal, JSON for machines, and a Markdown
// report with a PNG chart.
package report

import (
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bench/stats"
)

// Better says which direction of a figure is an improvement.
type Better string

const (
	Higher Better = "higher"
	Lower  Better = "lower"
	// Neither marks figures that describe the run rather than rate the
	// server (samples sent, series found).
	Neither Better = ""
)

// Figure is one measured number.
type Figure struct {
	// Key is stable across runs and servers (samples_per_second); Label is
	// for people (samples/s accepted).
	Key    string  `json:"key"`
	Label  string  `json:"label"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Better Better  `json:"better,omitempty"`
}

// Figures is an ordered list of figures.
type Figures []Figure

// Add appends a figure unless v is NaN or infinite (not measured).
func (fs *Figures) Add(key, label, unit string, better Better, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	*fs = append(*fs, Figure{Key: key, Label: label, Unit: unit, Value: v, Better: better})
}

// Get returns the figure with key.
func (fs Figures) Get(key string) (Figure, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return Figure{}, false
}

// Run is the result for one server.
type Run struct {
	Server string `json:"server"`
	// Target is the command line the server was started with, or the URL
	// it was reached at.
	Target string `json:"target"`
	// Figures are the medians of Rounds when there are several.
	Figures Figures   `json:"figures"`
	Rounds  []Figures `json:"rounds,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// Param is one setting of the run.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Go       string `json:"go"`
}

// Chart says what the chart shows: the figures with these keys, which
// should share a unit, one group of bars per figure and one bar per server.
type Chart struct {
	Title string   `json:"title"`
	Keys  []string `json:"keys"`
}

// Result is everything a run produced.
type Result struct {
	Workload string    `json:"workload"`
	Started  time.Time `json:"started"`
	Machine  Machine   `json:"machine"`
	Params   []Param   `json:"params"`
	Runs     []Run     `json:"runs"`
	Chart    Chart     `json:"chart"`
	Notes    []string  `json:"notes,omitempty"`
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	return Machine{
		CPUs:     runtime.NumCPU(),
		CPUModel: cpuModel(),
		OS:       runtime.GOOS,
		Arch:     runtime.GOARCH,
		Go:       runtime.Version(),
	}
}

// cpuModel reads the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown"
}

// Median combines the figures of several rounds of one server into one
// figure per key, the median of the rounds that measured it, in the order
// keys first appear.
func Median(rounds []Figures) Figures {
	var order []string
	byKey := map[string][]Figure{}
	for _, r := range rounds {
		for _, f := range r {
			if _, ok := byKey[f.Key]; !ok {
				order = append(order, f.Key)
			}
			byKey[f.Key] = append(byKey[f.Key], f)
		}
	}
	out := make(Figures, 0, len(order))
	for _, k := range order {
		fs := byKey[k]
		vs := make([]float64, len(fs))
		for i, f := range fs {
			vs[i] = f.Value
		}
		m := fs[0]
		m.Value = stats.Median(vs)
		out = append(out, m)
	}
	return out
}
