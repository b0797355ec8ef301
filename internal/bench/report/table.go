package report

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// grid is the results as rows of cells, shared by the text and Markdown
// renderers: figure, unit, better, one column per server and one ratio
// column per server after the first.
type grid struct {
	header []string
	rows   [][]string
}

func (r *Result) grid() grid {
	g := grid{header: []string{"figure", "unit", "better"}}
	for _, run := range r.Runs {
		g.header = append(g.header, run.Server)
	}
	for _, run := range r.Runs[min(1, len(r.Runs)):] {
		g.header = append(g.header, run.Server+"/"+r.Runs[0].Server)
	}
	// Rows in the order figures first appear across servers.
	var keys []string
	labels := map[string]Figure{}
	for _, run := range r.Runs {
		for _, f := range run.Figures {
			if _, ok := labels[f.Key]; !ok {
				keys = append(keys, f.Key)
				labels[f.Key] = f
			}
		}
	}
	for _, k := range keys {
		f := labels[k]
		row := []string{f.Label, f.Unit, string(f.Better)}
		values := make([]float64, len(r.Runs))
		for i, run := range r.Runs {
			values[i] = math.NaN()
			if v, ok := run.Figures.Get(k); ok {
				values[i] = v.Value
				row = append(row, formatValue(v.Value))
			} else {
				row = append(row, "-")
			}
		}
		for i := 1; i < len(r.Runs); i++ {
			if f.Better == Neither {
				row = append(row, "")
				continue
			}
			row = append(row, formatRatio(values[i], values[0]))
		}
		g.rows = append(g.rows, row)
	}
	return g
}

// WriteTable writes the result as an aligned plain-text table, with the
// parameters above it and the notes below.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "strata-bench %s\n", r.Workload)
	nameWidth := 0
	for _, p := range r.Params {
		nameWidth = max(nameWidth, len(p.Name))
	}
	for _, p := range r.Params {
		fmt.Fprintf(&b, "  %-*s  %s\n", nameWidth, p.Name, p.Value)
	}
	b.WriteByte('\n')
	g := r.grid()
	widths := make([]int, len(g.header))
	for i, h := range g.header {
		widths[i] = len(h)
	}
	for _, row := range g.rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			// Text columns align left, numbers right.
			if i < 3 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "%*s", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	line(g.header)
	for _, row := range g.rows {
		line(row)
	}
	notes := r.allNotes()
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "note: %s\n", n)
		}
	}
	// Padding after the last cell of a line is noise.
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// allNotes returns the run's notes and each server's, prefixed with its
// name.
func (r *Result) allNotes() []string {
	notes := append([]string(nil), r.Notes...)
	for _, run := range r.Runs {
		for _, n := range run.Notes {
			notes = append(notes, run.Server+": "+n)
		}
	}
	return notes
}
