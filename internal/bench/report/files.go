package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Report file names inside a report directory.
const (
	MarkdownFile = "report.md"
	ChartFile    = "chart.png"
)

// SaveJSON writes the result as JSON to path.
func SaveJSON(path string, r *Result) error {
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write JSON result: %w", err)
	}
	return nil
}

// SaveReport writes report.md and chart.png into dir, creating it.
func SaveReport(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	var chart bytes.Buffer
	chartName := ChartFile
	if err := WriteChart(&chart, r); err != nil {
		// A report without a chart is still a report.
		chartName = ""
		r.Notes = append(r.Notes, "no chart: "+err.Error())
	} else if err := os.WriteFile(filepath.Join(dir, ChartFile), chart.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, chartName); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
