package rwpb

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// This file turns what the generated decoders give into this package's
// types, and both into text, so that tests compare every value. The text
// shows floats as bits (NaN payloads matter: the stale marker is one) and
// does not tell nil from empty slices.

func v1FromProm(req *prompb.WriteRequest) ([]V1Series, []V1Metadata) {
	var series []V1Series
	for _, ts := range req.Timeseries {
		s := V1Series{}
		for _, l := range ts.Labels {
			s.Labels = append(s.Labels, Label{l.Name, l.Value})
		}
		for _, x := range ts.Samples {
			s.Samples = append(s.Samples, Sample{Value: x.Value, Timestamp: x.Timestamp})
		}
		for _, e := range ts.Exemplars {
			ex := Exemplar{Value: e.Value, Timestamp: e.Timestamp}
			for _, l := range e.Labels {
				ex.Labels = append(ex.Labels, Label{l.Name, l.Value})
			}
			s.Exemplars = append(s.Exemplars, ex)
		}
		for _, h := range ts.Histograms {
			_, cf := h.Count.(*prompb.Histogram_CountFloat)
			_, zf := h.ZeroCount.(*prompb.Histogram_ZeroCountFloat)
			s.Histograms = append(s.Histograms, Histogram{
				IsFloat:        cf || h.Count == nil && zf,
				CountInt:       h.GetCountInt(),
				CountFloat:     h.GetCountFloat(),
				Sum:            h.Sum,
				Schema:         h.Schema,
				ZeroThreshold:  h.ZeroThreshold,
				ZeroCountInt:   h.GetZeroCountInt(),
				ZeroCountFloat: h.GetZeroCountFloat(),
				NegativeSpans:  spansFromProm(h.NegativeSpans),
				NegativeDeltas: h.NegativeDeltas,
				NegativeCounts: h.NegativeCounts,
				PositiveSpans:  spansFromProm(h.PositiveSpans),
				PositiveDeltas: h.PositiveDeltas,
				PositiveCounts: h.PositiveCounts,
				ResetHint:      ResetHint(h.ResetHint),
				Timestamp:      h.Timestamp,
				CustomValues:   h.CustomValues,
			})
		}
		series = append(series, s)
	}
	var md []V1Metadata
	for _, m := range req.Metadata {
		md = append(md, V1Metadata{Type: MetricType(m.Type), MetricFamilyName: m.MetricFamilyName, Help: m.Help, Unit: m.Unit})
	}
	return series, md
}

func spansFromProm(in []prompb.BucketSpan) []BucketSpan {
	var out []BucketSpan
	for _, s := range in {
		out = append(out, BucketSpan{Offset: s.Offset, Length: s.Length})
	}
	return out
}

func spansFromV2(in []writev2.BucketSpan) []BucketSpan {
	var out []BucketSpan
	for _, s := range in {
		out = append(out, BucketSpan{Offset: s.Offset, Length: s.Length})
	}
	return out
}

func v2FromProm(req *writev2.Request) ([]string, []V2Series) {
	var series []V2Series
	for _, ts := range req.Timeseries {
		s := V2Series{
			LabelRefs: ts.LabelsRefs,
			Metadata:  V2Metadata{Type: MetricType(ts.Metadata.Type), HelpRef: ts.Metadata.HelpRef, UnitRef: ts.Metadata.UnitRef},
		}
		for _, x := range ts.Samples {
			s.Samples = append(s.Samples, Sample{Value: x.Value, Timestamp: x.Timestamp, StartTimestamp: x.StartTimestamp})
		}
		for _, e := range ts.Exemplars {
			s.Exemplars = append(s.Exemplars, Exemplar{LabelRefs: e.LabelsRefs, Value: e.Value, Timestamp: e.Timestamp})
		}
		for _, h := range ts.Histograms {
			_, cf := h.Count.(*writev2.Histogram_CountFloat)
			_, zf := h.ZeroCount.(*writev2.Histogram_ZeroCountFloat)
			s.Histograms = append(s.Histograms, Histogram{
				IsFloat:        cf || h.Count == nil && zf,
				CountInt:       h.GetCountInt(),
				CountFloat:     h.GetCountFloat(),
				Sum:            h.Sum,
				Schema:         h.Schema,
				ZeroThreshold:  h.ZeroThreshold,
				ZeroCountInt:   h.GetZeroCountInt(),
				ZeroCountFloat: h.GetZeroCountFloat(),
				NegativeSpans:  spansFromV2(h.NegativeSpans),
				NegativeDeltas: h.NegativeDeltas,
				NegativeCounts: h.NegativeCounts,
				PositiveSpans:  spansFromV2(h.PositiveSpans),
				PositiveDeltas: h.PositiveDeltas,
				PositiveCounts: h.PositiveCounts,
				ResetHint:      ResetHint(h.ResetHint),
				Timestamp:      h.Timestamp,
				CustomValues:   h.CustomValues,
				StartTimestamp: h.StartTimestamp,
			})
		}
		series = append(series, s)
	}
	return req.Symbols, series
}

// dumper writes values as text, one field per line.
type dumper struct{ strings.Builder }

func (d *dumper) f(format string, args ...any) { fmt.Fprintf(&d.Builder, format+"\n", args...) }

func bits(f float64) string { return fmt.Sprintf("%#016x", math.Float64bits(f)) }

func (d *dumper) bitsList(name string, fs []float64) {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = bits(f)
	}
	d.f("  %s %s", name, strings.Join(parts, ","))
}

func (d *dumper) labels(indent string, ls []Label) {
	for _, l := range ls {
		d.f("%slabel %q=%q", indent, l.Name, l.Value)
	}
}

func (d *dumper) samples(ss []Sample) {
	for _, s := range ss {
		d.f(" sample %s t=%d st=%d", bits(s.Value), s.Timestamp, s.StartTimestamp)
	}
}

func (d *dumper) exemplars(es []Exemplar) {
	for _, e := range es {
		d.f(" exemplar %s t=%d refs=%v", bits(e.Value), e.Timestamp, e.LabelRefs)
		d.labels("  ", e.Labels)
	}
}

func (d *dumper) histograms(hs []Histogram) {
	for _, h := range hs {
		d.f(" histogram float=%v count=%d/%s sum=%s schema=%d zt=%s zc=%d/%s reset=%d t=%d st=%d",
			h.IsFloat, h.CountInt, bits(h.CountFloat), bits(h.Sum), h.Schema, bits(h.ZeroThreshold),
			h.ZeroCountInt, bits(h.ZeroCountFloat), h.ResetHint, h.Timestamp, h.StartTimestamp)
		d.f("  negative spans=%v deltas=%v", h.NegativeSpans, h.NegativeDeltas)
		d.bitsList("negative counts", h.NegativeCounts)
		d.f("  positive spans=%v deltas=%v", h.PositiveSpans, h.PositiveDeltas)
		d.bitsList("positive counts", h.PositiveCounts)
		d.bitsList("custom", h.CustomValues)
	}
}

func dumpV1(series []V1Series, md []V1Metadata) string {
	var d dumper
	for i, s := range series {
		d.f("series %d", i)
		d.labels(" ", s.Labels)
		d.samples(s.Samples)
		d.exemplars(s.Exemplars)
		d.histograms(s.Histograms)
	}
	for _, m := range md {
		d.f("metadata type=%d name=%q help=%q unit=%q", m.Type, m.MetricFamilyName, m.Help, m.Unit)
	}
	return d.String()
}

func dumpV2(symbols []string, series []V2Series) string {
	var d dumper
	d.f("symbols %q", symbols)
	for i, s := range series {
		d.f("series %d refs=%v metadata=%+v", i, s.LabelRefs, s.Metadata)
		d.samples(s.Samples)
		d.exemplars(s.Exemplars)
		d.histograms(s.Histograms)
	}
	return d.String()
}

// checkV1 decodes b with prompb and r and fails t unless both succeed and
// agree on every value.
func checkV1(t testing.TB, r *V1Request, b []byte) {
	t.Helper()
	var want prompb.WriteRequest
	if err := want.Unmarshal(b); err != nil {
		t.Fatalf("generated decoder: %v", err)
	}
	if err := r.Unmarshal(b); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if got, want := dumpV1(r.Series, r.Metadata), dumpV1(v1FromProm(&want)); got != want {
		t.Fatalf("decoded differently:\n--- rwpb\n%s--- generated\n%s", got, want)
	}
	checkCut(t, &r.a, r.Series, nil)
}

// checkV2 is checkV1 for 2.0.
func checkV2(t testing.TB, r *V2Request, b []byte) {
	t.Helper()
	var want writev2.Request
	if err := want.Unmarshal(b); err != nil {
		t.Fatalf("generated decoder: %v", err)
	}
	if err := r.Unmarshal(b); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if got, want := dumpV2(r.Symbols, r.Series), dumpV2(v2FromProm(&want)); got != want {
		t.Fatalf("decoded differently:\n--- rwpb\n%s--- generated\n%s", got, want)
	}
	checkCut(t, &r.a, nil, r.Series)
}

// checkCut checks that every slice of a decoded request is cut from the
// final backing array, in decoding order, with capacity equal to length.
// Values alone cannot show a missing fix-up: a slice left pointing into an
// array that an append later moved still reads the right values, but
// keeps the old array alive and lets an append overwrite its neighbour.
func checkCut(t testing.TB, a *arena, v1 []V1Series, v2 []V2Series) {
	t.Helper()
	type cursor struct {
		name string
		off  int
	}
	var (
		labels, refs, samples, exemplars, histograms     = &cursor{name: "labels"}, &cursor{name: "refs"}, &cursor{name: "samples"}, &cursor{name: "exemplars"}, &cursor{name: "histograms"}
		exLabels, exRefs                                 = &cursor{name: "exemplar labels"}, &cursor{name: "exemplar refs"}
		negSpans, posSpans, negDeltas, posDeltas, custom = &cursor{name: "negative spans"}, &cursor{name: "positive spans"}, &cursor{name: "negative deltas"}, &cursor{name: "positive deltas"}, &cursor{name: "custom values"}
		negCounts, posCounts                             = &cursor{name: "negative counts"}, &cursor{name: "positive counts"}
	)
	check := func(c *cursor, n, capacity int, got, want any) {
		t.Helper()
		if n == 0 {
			return
		}
		if capacity != n {
			t.Fatalf("%s at %d: cap %d, len %d", c.name, c.off, capacity, n)
		}
		if got != want {
			t.Fatalf("%s at %d: slice not cut from the final array", c.name, c.off)
		}
		c.off += n
	}
	checkHist := func(hs []Histogram) {
		for _, h := range hs {
			if len(h.NegativeSpans) > 0 {
				check(negSpans, len(h.NegativeSpans), cap(h.NegativeSpans), &h.NegativeSpans[0], &a.negSpans[negSpans.off])
			}
			if len(h.PositiveSpans) > 0 {
				check(posSpans, len(h.PositiveSpans), cap(h.PositiveSpans), &h.PositiveSpans[0], &a.posSpans[posSpans.off])
			}
			if len(h.NegativeDeltas) > 0 {
				check(negDeltas, len(h.NegativeDeltas), cap(h.NegativeDeltas), &h.NegativeDeltas[0], &a.negDeltas[negDeltas.off])
			}
			if len(h.PositiveDeltas) > 0 {
				check(posDeltas, len(h.PositiveDeltas), cap(h.PositiveDeltas), &h.PositiveDeltas[0], &a.posDeltas[posDeltas.off])
			}
			if len(h.NegativeCounts) > 0 {
				check(negCounts, len(h.NegativeCounts), cap(h.NegativeCounts), &h.NegativeCounts[0], &a.negCounts[negCounts.off])
			}
			if len(h.PositiveCounts) > 0 {
				check(posCounts, len(h.PositiveCounts), cap(h.PositiveCounts), &h.PositiveCounts[0], &a.posCounts[posCounts.off])
			}
			if len(h.CustomValues) > 0 {
				check(custom, len(h.CustomValues), cap(h.CustomValues), &h.CustomValues[0], &a.customVals[custom.off])
			}
		}
	}
	checkEx := func(es []Exemplar) {
		for _, e := range es {
			if len(e.Labels) > 0 {
				check(exLabels, len(e.Labels), cap(e.Labels), &e.Labels[0], &a.exLabels[exLabels.off])
			}
			if len(e.LabelRefs) > 0 {
				check(exRefs, len(e.LabelRefs), cap(e.LabelRefs), &e.LabelRefs[0], &a.exRefs[exRefs.off])
			}
		}
	}
	for _, s := range v1 {
		if len(s.Labels) > 0 {
			check(labels, len(s.Labels), cap(s.Labels), &s.Labels[0], &a.labels[labels.off])
		}
		if len(s.Samples) > 0 {
			check(samples, len(s.Samples), cap(s.Samples), &s.Samples[0], &a.samples[samples.off])
		}
		if len(s.Exemplars) > 0 {
			check(exemplars, len(s.Exemplars), cap(s.Exemplars), &s.Exemplars[0], &a.exemplars[exemplars.off])
		}
		if len(s.Histograms) > 0 {
			check(histograms, len(s.Histograms), cap(s.Histograms), &s.Histograms[0], &a.histograms[histograms.off])
		}
		checkEx(s.Exemplars)
		checkHist(s.Histograms)
	}
	for _, s := range v2 {
		if len(s.LabelRefs) > 0 {
			check(refs, len(s.LabelRefs), cap(s.LabelRefs), &s.LabelRefs[0], &a.refs[refs.off])
		}
		if len(s.Samples) > 0 {
			check(samples, len(s.Samples), cap(s.Samples), &s.Samples[0], &a.samples[samples.off])
		}
		if len(s.Exemplars) > 0 {
			check(exemplars, len(s.Exemplars), cap(s.Exemplars), &s.Exemplars[0], &a.exemplars[exemplars.off])
		}
		if len(s.Histograms) > 0 {
			check(histograms, len(s.Histograms), cap(s.Histograms), &s.Histograms[0], &a.histograms[histograms.off])
		}
		checkEx(s.Exemplars)
		checkHist(s.Histograms)
	}
}

// pb hand-encodes protobuf, for what the generated encoders never write
// (unpacked repeated fields, unknown fields, malformed input).
type pb []byte

func (p pb) tag(num, wt int) pb          { return binary.AppendUvarint(p, uint64(num)<<3|uint64(wt)) }
func (p pb) varint(num int, v uint64) pb { return binary.AppendUvarint(p.tag(num, wireVarint), v) }
func (p pb) double(num int, f float64) pb {
	return binary.LittleEndian.AppendUint64(p.tag(num, wireFixed64), math.Float64bits(f))
}
func (p pb) fixed32(num int, v uint32) pb {
	return binary.LittleEndian.AppendUint32(p.tag(num, wireFixed32), v)
}
func (p pb) bytes(num int, b []byte) pb {
	return append(binary.AppendUvarint(p.tag(num, wireBytes), uint64(len(b))), b...)
}
func (p pb) str(num int, s string) pb { return p.bytes(num, []byte(s)) }

func zz(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// unknownFields is one unknown field of each wire type a decoder must
// skip, with numbers no message here uses.
var unknownFields = pb(nil).varint(100, 1<<40).double(101, math.Pi).str(102, "ignored").fixed32(103, 7).varint(1<<29-1, 3)

// realisticV1 is a request of n series, each of labels labels (a metric
// name, a job and instance, and more) and one sample, as Prometheus sends
// them.
func realisticV1(n, labels int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{}
	for i := range n {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("http_requests_total_%d", i%50)}}}
		for k := 1; k < labels; k++ {
			ts.Labels = append(ts.Labels, prompb.Label{Name: fmt.Sprintf("label_%d", k), Value: fmt.Sprintf("value-%d-%d", k, i)})
		}
		ts.Samples = []prompb.Sample{{Value: float64(i) * 1.5, Timestamp: 1_700_000_000_000 + int64(i)}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	return req
}

// realisticV2 is realisticV1 in 2.0.
func realisticV2(n, labels int) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i := range n {
		ts := writev2.TimeSeries{}
		ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize("__name__"), st.Symbolize(fmt.Sprintf("http_requests_total_%d", i%50)))
		for k := 1; k < labels; k++ {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(fmt.Sprintf("label_%d", k)), st.Symbolize(fmt.Sprintf("value-%d-%d", k, i)))
		}
		ts.Samples = []writev2.Sample{{Value: float64(i) * 1.5, Timestamp: 1_700_000_000_000 + int64(i)}}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests served.")}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return req
}

func marshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
