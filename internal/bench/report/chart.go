package report

import (
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart geometry. Bars are horizontal so that long figure labels (query
// names) read as they are; the height grows with the number of bars so
// that each stays legible.
const (
	chartWidth     = 8 * vg.Inch
	chartBarHeight = 0.22 * vg.Inch
	chartMinHeight = 3 * vg.Inch
	chartMargin    = 1.6 * vg.Inch // title, axis and legend
)

// chartKeys returns the figures the chart shows: Chart.Keys, or the first
// figure when none are given.
func (r *Result) chartKeys() []string {
	if len(r.Chart.Keys) > 0 {
		return r.Chart.Keys
	}
	for _, run := range r.Runs {
		if len(run.Figures) > 0 {
			return []string{run.Figures[0].Key}
		}
	}
	return nil
}

func (r *Result) chartTitle() string {
	if r.Chart.Title != "" {
		return r.Chart.Title
	}
	return "strata-bench " + r.Workload
}

// WriteChart draws the chart as a PNG: one group of bars per chart figure,
// one bar per server.
func WriteChart(w io.Writer, r *Result) error {
	keys := r.chartKeys()
	if len(keys) == 0 || len(r.Runs) == 0 {
		return fmt.Errorf("chart: no figures to draw")
	}
	p := plot.New()
	p.Title.Text = r.chartTitle()
	var unit string
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k
		for _, run := range r.Runs {
			if f, ok := run.Figures.Get(k); ok {
				names[i], unit = f.Label, f.Unit
				break
			}
		}
	}
	p.X.Label.Text = unit
	p.X.Min = 0
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = formatValue(ticks[i].Value)
			}
		}
		return ticks
	})

	n := len(r.Runs)
	barWidth := chartBarHeight
	var top float64
	for i, run := range r.Runs {
		// The y axis counts from the bottom; fill it from the top so the
		// chart reads in the table's order.
		vs := make(plotter.Values, len(keys))
		for j, k := range keys {
			if f, ok := run.Figures.Get(k); ok && !math.IsNaN(f.Value) {
				vs[len(keys)-1-j] = f.Value
				top = max(top, f.Value)
			}
		}
		bars, err := plotter.NewBarChart(vs, barWidth)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		bars.Horizontal = true
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		// Centre the group of n bars on each label.
		bars.Offset = barWidth * vg.Length(float64(n-1)/2-float64(i))
		p.Add(bars)
		p.Legend.Add(run.Server, bars)
	}
	p.Legend.Top = true
	// Room on the right for the legend, clear of the longest bar.
	p.X.Max = top * 1.3
	slices.Reverse(names)
	p.NominalY(names...)

	h := max(chartMinHeight, chartBarHeight*vg.Length(n*len(keys))*1.4+chartMargin)
	wt, err := p.WriterTo(chartWidth, h, "png")
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}
