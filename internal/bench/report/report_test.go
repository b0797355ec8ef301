package report

import (
	"bytes"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// sample is a two-server result with every kind of figure: ratios, a
// figure only one server has, one that rates nothing, notes and rounds.
func sample() *Result {
	a1 := Figures{}
	a1.Add("samples_per_second", "samples/s accepted", "samples/s", Higher, 512345.6)
	a1.Add("latency_p99", "request latency p99", "ms", Lower, 12.3456)
	a1.Add("cpu_per_million", "server CPU per million samples", "s", Lower, 1.5)
	a1.Add("samples_sent", "samples sent", "samples", Neither, 3_000_000)
	a2 := Figures{}
	a2.Add("samples_per_second", "samples/s accepted", "samples/s", Higher, 498000)
	a2.Add("latency_p99", "request latency p99", "ms", Lower, 14)
	a2.Add("cpu_per_million", "server CPU per million samples", "s", Lower, 1.7)
	a2.Add("samples_sent", "samples sent", "samples", Neither, 3_000_000)
	b1 := Figures{}
	b1.Add("samples_per_second", "samples/s accepted", "samples/s", Higher, 250000)
	b1.Add("latency_p99", "request latency p99", "ms", Lower, 30.25)
	b1.Add("errors_400", "errors (HTTP 400)", "requests", Lower, 2)
	b1.Add("samples_sent", "samples sent", "samples", Neither, 3_000_000)
	b1.Add("ignored", "not measured", "s", Lower, math.NaN())
	return &Result{
		Workload: "ingest",
		Started:  time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC),
		Machine:  Machine{CPUs: 2, CPUModel: "AMD EPYC", OS: "linux", Arch: "amd64", Go: "go1.26.8"},
		Params:   []Param{{"protocol", "1.0"}, {"series", "100000"}, {"note|pipe", "a|b"}},
		Runs: []Run{
			{Server: "strata", Target: "/tmp/strata --listen-address {addr}", Figures: Median([]Figures{a1, a2}), Rounds: []Figures{a1, a2}},
			{Server: "prometheus", Target: "prometheus --web.enable-remote-write-receiver", Figures: b1, Rounds: []Figures{b1}, Notes: []string{"2 requests failed"}},
		},
		Chart: Chart{Title: "Ingest throughput", Keys: []string{"samples_per_second"}},
		Notes: []string{"quick smoke run"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		render func(*bytes.Buffer, *Result) error
	}{
		{"table.golden", func(b *bytes.Buffer, r *Result) error { return WriteTable(b, r) }},
		{"report.md.golden", func(b *bytes.Buffer, r *Result) error { return WriteMarkdown(b, r, ChartFile) }},
		{"result.json.golden", func(b *bytes.Buffer, r *Result) error { return WriteJSON(b, r) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b, sample()); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
	t.Run("single server", func(t *testing.T) {
		r := sample()
		r.Runs = r.Runs[:1]
		var b bytes.Buffer
		if err := WriteTable(&b, r); err != nil {
			t.Fatal(err)
		}
		golden(t, "table_single.golden", b.Bytes())
	})
}

func TestMedian(t *testing.T) {
	r := sample()
	f, _ := r.Runs[0].Figures.Get("samples_per_second")
	if f.Value != (512345.6+498000)/2 || f.Label != "samples/s accepted" {
		t.Fatalf("median figure %+v", f)
	}
	if _, ok := r.Runs[1].Figures.Get("ignored"); ok {
		t.Fatal("a NaN figure was added")
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0:          "0",
		7:          "7",
		1234:       "1,234",
		-1234567:   "-1,234,567",
		123:        "123",
		999999.5:   "1,000,000",
		12.345:     "12.3",
		1.2345:     "1.23",
		0.012345:   "0.0123",
		-0.5:       "-0.5",
		100.5:      "100",
		1e15 + 0.5: "1,000,000,000,000,000",
	} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestSaveReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := sample()
	if err := SaveReport(dir, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, ChartFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("chart is %v", b)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil || !bytes.Contains(md, []byte("![Ingest throughput](chart.png)")) {
		t.Fatalf("report.md: %v\n%s", err, md)
	}
	if err := SaveJSON(filepath.Join(dir, "r.json"), r); err != nil {
		t.Fatal(err)
	}
}
