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
// from 8 h on, the values stay stored: see chunkenc.StoredPer). The
// steps are a multiple of the interval, or, as strata-bench's from the
// first sample to the last, not. The series share their sample times,
// as the series of one target do, or they alternate with a series whose
// times are a millisecond later.
//
//	go test -run=NONE -bench=BenchmarkSeriesEval -benchmem -count=6 ./internal/rollup/
func BenchmarkSeriesEval(b *testing.B) {
	const interval = int64(15000)
	for _, span := range []time.Duration{2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour} {
		n := int(span.Milliseconds() / interval)
		for _, fn := range []string{"rate", "selector"} {
			for _, step := range []string{"aligned", "unaligned"} {
				st := steps{start: 0, end: span.Milliseconds(), interval: span.Milliseconds() / 240}
				if step == "unaligned" {
					st.end = int64(n-1) * interval
					st.interval = st.end / 240
				}
				for _, times := range []string{"shared", "own"} {
					b.Run(fmt.Sprintf("span=%v/fn=%s/step=%s/times=%s", span, fn, step, times), func(b *testing.B) {
						slots := []*seriesSlot{{series: counterSeries(b, n, interval, 0)}}
						if times == "own" {
							slots = append(slots, &seriesSlot{series: counterSeries(b, n, interval, 1)})
						}
						se := &seriesEval{}
						wd := windowing{st: st, rng: 5 * time.Minute, fn: windowFuncs["rate"]}
						if fn == "selector" {
							wd.fn = selectorFunc
						}
						b.ReportAllocs()
						i := 0
						for b.Loop() {
							sl := slots[i%len(slots)]
							i++
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
	}
}

// counterSeries is a counter of n samples interval ms apart from from,
// with values in hundredths, in decimal chunks of chunkenc.JoinSamples.
func counterSeries(b *testing.B, n int, interval, from int64) *chunkenc.Series {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &chunkenc.Series{MinT: from, MaxT: from + int64(n-1)*interval}
	var d chunkenc.Densifier
	c := 0
	for i := 0; i < n; i += chunkenc.JoinSamples {
		ch := chunkenc.NewXORChunk()
		k := min(n-i, chunkenc.JoinSamples)
		for j := range k {
			c += rng.IntN(500)
			ch.Append(from+int64(i+j)*interval, float64(c)/100)
		}
		data, ok := d.Densify(ch.Bytes())
		if !ok {
			b.Fatal("not densified")
		}
		s.Chunks = append(s.Chunks, chunkenc.Meta{Data: append([]byte(nil), data...), MinT: from + int64(i)*interval, MaxT: from + int64(i+k-1)*interval, Enc: chunkenc.EncDecimal})
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
