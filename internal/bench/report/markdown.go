package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteMarkdown writes the result as a Markdown report. chart, if not
// empty, is the file name of the chart image, relative to the report.
func WriteMarkdown(w io.Writer, r *Result, chart string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# strata-bench %s\n\n", r.Workload)
	m := r.Machine
	fmt.Fprintf(&b, "Run at %s on %d × %s (%s/%s, %s).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04:05 MST"), m.CPUs, m.CPUModel, m.OS, m.Arch, m.Go)

	b.WriteString("## Servers\n\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "- **%s**: `%s`", mdEscape(run.Server), run.Target)
		if len(run.Rounds) > 1 {
			fmt.Fprintf(&b, " (median of %d rounds)", len(run.Rounds))
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## Parameters\n\n| parameter | value |\n| --- | --- |\n")
	for _, p := range r.Params {
		fmt.Fprintf(&b, "| %s | %s |\n", mdEscape(p.Name), mdEscape(p.Value))
	}

	b.WriteString("\n## Results\n\n")
	g := r.grid()
	b.WriteString("| " + strings.Join(mdEscapeAll(g.header), " | ") + " |\n|")
	for i := range g.header {
		if i < 3 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range g.rows {
		b.WriteString("| " + strings.Join(mdEscapeAll(row), " | ") + " |\n")
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![%s](%s)\n", mdEscape(r.chartTitle()), chart)
	}
	if notes := r.allNotes(); len(notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func mdEscapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mdEscape(s)
	}
	return out
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	clean := *r
	clean.Runs = make([]Run, len(r.Runs))
	for i, run := range r.Runs {
		// encoding/json cannot write NaN or infinities; Add keeps them out,
		// and this keeps a hand-built figure from failing the whole file.
		run.Figures = finite(run.Figures)
		rounds := make([]Figures, len(run.Rounds))
		for j, fs := range run.Rounds {
			rounds[j] = finite(fs)
		}
		run.Rounds = rounds
		clean.Runs[i] = run
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&clean)
}

func finite(fs Figures) Figures {
	out := make(Figures, 0, len(fs))
	for _, f := range fs {
		if !math.IsNaN(f.Value) && !math.IsInf(f.Value, 0) {
			out = append(out, f)
		}
	}
	return out
}
