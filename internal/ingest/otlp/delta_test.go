package otlp

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/strata-db/strata/internal/head"
)

// deltaRequest is one request of three delta streams: a sum, an
// explicit-bucket histogram and an exponential histogram, each covering
// (start, end] seconds after t0 with the given increase.
func deltaRequest(start, end int, inc uint64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	st := pcommon.NewTimestampFromTime(t0.Add(time.Duration(start) * time.Second))
	ts := pcommon.NewTimestampFromTime(t0.Add(time.Duration(end) * time.Second))

	m := sm.Metrics().AppendEmpty()
	m.SetName("jobs")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	p := sum.DataPoints().AppendEmpty()
	p.SetStartTimestamp(st)
	p.SetTimestamp(ts)
	p.SetIntValue(int64(inc))

	m = sm.Metrics().AppendEmpty()
	m.SetName("wait")
	m.SetUnit("s")
	hist := m.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	hp := hist.DataPoints().AppendEmpty()
	hp.SetStartTimestamp(st)
	hp.SetTimestamp(ts)
	hp.ExplicitBounds().FromRaw([]float64{1})
	hp.BucketCounts().FromRaw([]uint64{inc, 1})
	hp.SetCount(inc + 1)
	hp.SetSum(float64(inc) + 5)

	m = sm.Metrics().AppendEmpty()
	m.SetName("size")
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetStartTimestamp(st)
	ep.SetTimestamp(ts)
	ep.SetScale(0)
	ep.Positive().SetOffset(1)
	ep.Positive().BucketCounts().FromRaw([]uint64{inc})
	ep.SetCount(inc)
	ep.SetSum(float64(3 * inc))
	return md
}

// TestDeltaCumulative sends deltas of a sum and of both kinds of
// histograms, one out of order, and reads back cumulative series that
// start at the first delta's start.
func TestDeltaCumulative(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	send := func(start, end int, inc uint64) pmetricotlp.ExportResponse {
		t.Helper()
		return response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, deltaRequest(start, end, inc))))
	}
	for _, r := range []struct{ start, end, inc int }{{0, 10, 2}, {10, 20, 3}, {20, 30, 4}} {
		if ps := send(r.start, r.end, uint64(r.inc)).PartialSuccess(); ps.RejectedDataPoints() != 0 {
			t.Fatalf("deltas (%d, %d]: %d rejected: %s", r.start, r.end, ps.RejectedDataPoints(), ps.ErrorMessage())
		}
	}
	// A delta older than the streams' newest is dropped, and said so.
	ps := send(10, 20, 100).PartialSuccess()
	if ps.RejectedDataPoints() != 3 || !strings.Contains(ps.ErrorMessage(), "dropped by the conversion to cumulative") {
		t.Errorf("out-of-order deltas: %d rejected, %q; want 3", ps.RejectedDataPoints(), ps.ErrorMessage())
	}

	ms := func(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixMilli() }
	got := dump(t, hd)
	var want []string
	for _, w := range []struct {
		series string
		vals   [3]string
	}{
		{`{__name__="jobs_total"}`, [3]string{"2", "5", "9"}},
		{`{__name__="size"}`, [3]string{"histogram count=2 sum=6 schema=0", "histogram count=5 sum=15 schema=0", "histogram count=9 sum=27 schema=0"}},
		{`{__name__="wait_seconds_bucket", le="+Inf"}`, [3]string{"3", "7", "12"}},
		{`{__name__="wait_seconds_bucket", le="1"}`, [3]string{"2", "5", "9"}},
		{`{__name__="wait_seconds_count"}`, [3]string{"3", "7", "12"}},
		{`{__name__="wait_seconds_sum"}`, [3]string{"7", "15", "24"}},
	} {
		for i, v := range w.vals {
			want = append(want, fmt.Sprintf("%s %d %s", w.series, ms(10*(i+1)), v))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, name := range []string{"jobs_total", "size", "wait_seconds_count"} {
		if st := startTimes(t, hd, name); !slices.Equal(st, []int64{ms(0), ms(0), ms(0)}) {
			t.Errorf("%s: start times %v, want the first delta's start, %d, throughout", name, st, ms(0))
		}
	}
}

// startTimes returns the start time of each sample of series name.
func startTimes(t *testing.T, hd *head.Head, name string) []int64 {
	t.Helper()
	q, err := hd.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	var out []int64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != promchunkenc.ValNone {
			out = append(out, it.AtST())
		}
	}
	return out
}

// TestConcurrentRequests sends deltas and cumulative points from several
// senders at once (under -race in CI): every sender's sums come out whole.
func TestConcurrentRequests(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	const senders, requests = 6, 20
	var wg sync.WaitGroup
	for c := range senders {
		wg.Go(func() {
			for i := range requests {
				md := deltaRequest(10*i, 10*(i+1), uint64(c+1))
				md.ResourceMetrics().At(0).Resource().Attributes().PutStr("service.name", fmt.Sprint("sender-", c))
				g := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
				g.SetName("level")
				p := g.SetEmptyGauge().DataPoints().AppendEmpty()
				p.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(10*(i+1)) * time.Second)))
				p.SetIntValue(int64(i))
				w := post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, md))
				if w.Code != http.StatusOK {
					t.Errorf("sender %d request %d: status %d: %s", c, i, w.Code, w.Body)
					return
				}
			}
		})
	}
	wg.Wait()
	last := map[string]string{}
	for _, s := range dump(t, hd) {
		series := s[:strings.LastIndexByte(s[:strings.LastIndexByte(s, ' ')], ' ')]
		last[series] = s[strings.LastIndexByte(s, ' ')+1:]
	}
	for c := range senders {
		job := fmt.Sprint("sender-", c)
		if got, want := last[`{__name__="jobs_total", job="`+job+`"}`], fmt.Sprint(requests*(c+1)); got != want {
			t.Errorf("%s: jobs_total ends at %s, want %s", job, got, want)
		}
		if got, want := last[`{__name__="level", job="`+job+`"}`], fmt.Sprint(requests-1); got != want {
			t.Errorf("%s: level ends at %s, want %s", job, got, want)
		}
	}
}
