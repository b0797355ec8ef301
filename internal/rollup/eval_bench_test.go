package rollup

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/strata-db/strata/internal/chunkenc"
)

// BenchmarkSeriesEval loads a counter of hundredths scraped every 15 s
// from a block's chunks (decimal, JoinSamples samples each) and computes
// rate(...[5m]) or the selector's value at 240 steps: a worker's part of
// a dashboard's range query, over 2 h to 24 h (2 to 24 samples a step;
// from 8 h on, the values stay stored: see chunkenc.StoredPer).
//
//	go test -run=NONE -bench=BenchmarkSeriesEval -benchmem -count=6 ./internal/rollup/
func BenchmarkSeriesEval(b *testing.B) {
	for _, span := range []time.Duration{2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour} {
		for _, fn := range []string{"rate", "selector"} {
			b.Run(fmt.Sprintf("span=%v/fn=%s", span, fn), func(b *testing.B) {
				const interval = int64(15000)
				n := int(span.Milliseconds() / interval)
				series := counterSeries(b, n, interval)
				st := steps{start: 0, end: span.Milliseconds(), interval: span.Milliseconds() / 240}
				se := &seriesEval{}
				sl := &seriesSlot{series: series}
				wd := windowing{st: st, rng: 5 * time.Minute, fn: windowFuncs["rate"]}
				if fn == "selector" {
					wd.fn = selectorFunc
				}
				b.ReportAllocs()
				for b.Loop() {
					se.do(sl, wd)
					if sl.err != nil || sl.got == 0 {
						b.Fatal(sl.err, sl.got)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
			})
		}
	}
}

// counterSeries is a counter of n samples interval ms apart from 0, with
// values in hundredths, in decimal chunks of chunkenc.JoinSamples.
func counterSeries(b *testing.B, n int, interval int64) *chunkenc.Series {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &chunkenc.Series{MinT: 0, MaxT: int64(n-1) * interval}
	var d chunkenc.Densifier
	c := 0
	for i := 0; i < n; i += chunkenc.JoinSamples {
		ch := chunkenc.NewXORChunk()
		k := min(n-i, chunkenc.JoinSamples)
		for j := range k {
			c += rng.IntN(500)
			ch.Append(int64(i+j)*interval, float64(c)/100)
		}
		data, ok := d.Densify(ch.Bytes())
		if !ok {
			b.Fatal("not densified")
		}
		s.Chunks = append(s.Chunks, chunkenc.Meta{Data: append([]byte(nil), data...), MinT: int64(i) * interval, MaxT: int64(i+k-1) * interval, Enc: chunkenc.EncDecimal})
	}
	return s
}

// BenchmarkAggregate adds the values of 100 series at 240 steps into
// the groups of sum by and avg by, as a range query's aggregation takes
// the windows' results.
//
//	go test -run=NONE -bench=BenchmarkAggregate -benchmem -count=6 ./internal/rollup/
func BenchmarkAggregate(b *testing.B) {
	const steps, series = 240, 100
	rng := rand.New(rand.NewPCG(3, 4))
	lsets := make([]labels.Labels, series)
	vals := make([][]float64, series)
	has := make([][]bool, series)
	for i := range series {
		lsets[i] = labels.FromStrings("__name__", "x", "le", fmt.Sprint(i%10), "job", "j", "instance", fmt.Sprint(i))
		vals[i] = make([]float64, steps)
		has[i] = make([]bool, steps)
		for k := range steps {
			vals[i][k], has[i][k] = rng.Float64()*100, rng.IntN(20) != 0
		}
	}
	for _, op := range []parser.ItemType{parser.SUM, parser.AVG} {
		b.Run("op="+op.String(), func(b *testing.B) {
			e := &parser.AggregateExpr{Op: op, Grouping: []string{"le", "job"}}
			b.ReportAllocs()
			for b.Loop() {
				a := newAggregator(e, steps)
				for i := range series {
					a.add(lsets[i], vals[i], has[i])
				}
				if len(a.result()) != 10 {
					b.Fatal("not 10 groups")
				}
			}
		})
	}
}
