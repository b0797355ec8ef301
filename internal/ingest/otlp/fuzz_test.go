package otlp

import (
	"net/http"
	"testing"
)

// FuzzHandler sends arbitrary bodies, as protobuf and as JSON: the
// receiver answers each with 200 (all or part stored) or 400, never
// panics, and never takes seconds over one (a body whose points lie years
// apart once made millions of target_info samples).
//
//	go test ./internal/ingest/otlp -run NONE -fuzz FuzzHandler -fuzztime 1m
func FuzzHandler(f *testing.F) {
	f.Add(encodeProto(f, testMetrics()), false)
	f.Add(encodeJSON(f, testMetrics()), true)
	f.Add(encodeProto(f, deltaRequest(0, 10, 2)), false)
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[{"asDouble":1,"timeUnixNano":"1"}]}}]}]}]}`), true)
	hd := newTestHead(f)
	h := newHandler(f, hd, DefaultOptions())
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ct := contentProtobuf
		if asJSON {
			ct = contentJSON
		}
		w := post(h, "/v1/metrics", ct, "", body)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
