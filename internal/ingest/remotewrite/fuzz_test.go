package remotewrite

import (
	"net/http"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// FuzzWrite feeds arbitrary protobuf bytes (snappy-encoded, so that the
// fuzzer explores the message decoder rather than snappy's framing) and raw
// bodies to the handler. It must answer 204, 400 or 413, never panic.
//
//	go test ./internal/ingest/remotewrite -run NONE -fuzz FuzzWrite -fuzztime 60s
func FuzzWrite(f *testing.F) {
	seed, _ := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"__name__", "m", "job", "j"}, prompb.Sample{Timestamp: 1, Value: 1}, prompb.Sample{Timestamp: 2, Value: 2}),
		ts([]string{"job", "j"}, prompb.Sample{Timestamp: 1, Value: 1}),
	}}).Marshal()
	f.Add(seed, false)
	f.Add([]byte{}, false)
	f.Add([]byte("\x0a\x00"), true)
	hd := newTestHead(f)
	h := NewHandler(hd, DefaultOptions())
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		body := data
		if !raw {
			body = snappy.Encode(nil, data)
		}
		w := post(h, body, nil)
		switch w.Code {
		case http.StatusNoContent, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	})
}
