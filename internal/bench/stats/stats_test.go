package stats

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	thousand := make([]float64, 1000)
	for i := range thousand {
		thousand[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, math.NaN()},
		{"one value p0", []float64{7}, 0, 7},
		{"one value p50", []float64{7}, 50, 7},
		{"one value p100", []float64{7}, 100, 7},
		{"p50 of even count is lower middle", []float64{1, 2, 3, 4}, 50, 2},
		{"p50 of odd count is middle", []float64{1, 2, 3, 4, 5}, 50, 3},
		{"p51 of four", []float64{1, 2, 3, 4}, 51, 3},
		{"p99 of 100", hundred, 99, 99},
		{"p99.9 of 1000", thousand, 99.9, 999},
		{"p99 of 1000", thousand, 99, 990},
		{"p1 of 100", hundred, 1, 1},
		{"p0.5 of 100 rounds up to rank 1", hundred, 0.5, 1},
		{"p99 of 3 is max", []float64{1, 2, 3}, 99, 3},
		{"negative p is min", []float64{1, 2, 3}, -5, 1},
		{"p over 100 is max", []float64{1, 2, 3}, 150, 3},
		{"NaN p", []float64{1, 2, 3}, math.NaN(), math.NaN()},
		{"duplicates", []float64{1, 1, 1, 9}, 75, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Percentile(tt.sorted, tt.p)
			if math.IsNaN(tt.want) {
				if !math.IsNaN(got) {
					t.Fatalf("got %v, want NaN", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"empty", nil, math.NaN()},
		{"one", []float64{3}, 3},
		{"two is mean", []float64{4, 2}, 3},
		{"odd unsorted", []float64{9, 1, 5}, 5},
		{"even unsorted", []float64{10, 1, 3, 7}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.values...)
			got := Median(in)
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(tt.want) && got != tt.want) {
				t.Fatalf("Median(%v) = %v, want %v", tt.values, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.values[i] {
					t.Fatalf("Median modified its input: %v", in)
				}
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	if got := Summarize(nil); got != (Latency{}) {
		t.Fatalf("Summarize(nil) = %+v", got)
	}
	d := []time.Duration{40, 10, 30, 20}
	got := Summarize(d)
	want := Latency{Count: 4, P50: 20, P99: 40, Max: 40, Mean: 25}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
}
