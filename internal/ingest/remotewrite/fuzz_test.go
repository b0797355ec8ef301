package remotewrite

import (
	"net/http"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// FuzzWrite feeds arbitrary protobuf bytes (snappy-encoded, so that the
// fuzzer explores the message decoders rather than snappy's framing) and
// raw bodies to the handler, as remote-write 1.0 or 2.0. It must answer
// 204, 400 or 413, never panic.
//
//	go test ./internal/ingest/remotewrite -run NONE -fuzz FuzzWrite -fuzztime 60s
func FuzzWrite(f *testing.F) {
	seed, _ := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"__name__", "m", "job", "j"}, prompb.Sample{Timestamp: 1, Value: 1}, prompb.Sample{Timestamp: 2, Value: 2}),
		ts([]string{"job", "j"}, prompb.Sample{Timestamp: 1, Value: 1}),
	}}).Marshal()
	seed2, _ := (&writev2.Request{Symbols: []string{"", "__name__", "m"}, Timeseries: []writev2.TimeSeries{
		{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}},
		{LabelsRefs: []uint32{2, 9}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}},
	}}).Marshal()
	hist := ts([]string{"__name__", "h"})
	hist.Histograms = []prompb.Histogram{prompb.FromIntHistogram(1, testHistogram()), prompb.FromFloatHistogram(2, testHistogram().ToFloat(nil))}
	seed3, _ := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{hist}}).Marshal()
	seed4, _ := (&writev2.Request{Symbols: []string{"", "__name__", "h"}, Timeseries: []writev2.TimeSeries{
		{LabelsRefs: []uint32{1, 2}, Histograms: []writev2.Histogram{writev2.FromIntHistogram(1, 2, testHistogram()), writev2.FromFloatHistogram(0, 3, testHistogram().ToFloat(nil))}},
	}}).Marshal()
	// Exemplars in series of their own, as Prometheus sends them.
	seed5, _ := (&writev2.Request{Symbols: []string{"", "__name__", "m", "trace_id", "abc"}, Timeseries: []writev2.TimeSeries{
		{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}},
		{LabelsRefs: []uint32{1, 2}, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{3, 4}, Value: 1, Timestamp: 1}}},
	}}).Marshal()
	f.Add(seed, false, false)
	f.Add(seed2, false, true)
	f.Add(seed3, false, false)
	f.Add(seed4, false, true)
	f.Add(seed5, false, true)
	f.Add([]byte{}, false, false)
	f.Add([]byte("\x0a\x00"), true, true)
	hd := newTestHead(f)
	h := NewHandler(hd, DefaultOptions())
	f.Fuzz(func(t *testing.T, data []byte, raw, v2 bool) {
		body := data
		if !raw {
			body = snappy.Encode(nil, data)
		}
		var header map[string]string
		if v2 {
			header = map[string]string{"Content-Type": v2ContentType}
		}
		w := post(h, body, header)
		switch w.Code {
		case http.StatusNoContent, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	})
}
