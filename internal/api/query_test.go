package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, body)
	}
	return m
}

// TestStats checks the stats parameter. Timings vary from run to run, so
// this test looks at the shape and the sample counts, not at bytes.
func TestStats(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      string
		query     string
		wantStats bool
		perStep   bool
		warning   string
	}{
		{name: "absent", path: "/api/v1/query", query: q("query", "up", "time", "300")},
		{name: "true", path: "/api/v1/query", query: q("query", "up", "time", "300", "stats", "true"), wantStats: true},
		{name: "all_range", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "30", "step", "15", "stats", "all"), wantStats: true, perStep: true},
		{name: "true_range", path: "/api/v1/query_range", query: q("query", "up", "start", "0", "end", "30", "step", "15", "stats", "true"), wantStats: true},
		{
			name: "deprecated_value", path: "/api/v1/query", query: q("query", "up", "time", "300", "stats", "1"), wantStats: true,
			warning: `value "1" for parameter "stats" is deprecated and will be rejected in the next major release, use "true" or "all"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestAPI(fixture(), nil)
			rec := do(h, http.MethodGet, tc.path+"?"+tc.query, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			resp := decode(t, rec.Body.Bytes())
			data := resp["data"].(map[string]any)
			st, ok := data["stats"].(map[string]any)
			if ok != tc.wantStats {
				t.Fatalf("stats present %v, want %v: %s", ok, tc.wantStats, rec.Body)
			}
			if tc.warning != "" {
				ws, _ := resp["warnings"].([]any)
				if len(ws) != 1 || ws[0] != tc.warning {
					t.Errorf("warnings %v, want [%s]", ws, tc.warning)
				}
			} else if _, ok := resp["warnings"]; ok {
				t.Errorf("unexpected warnings: %v", resp["warnings"])
			}
			if !ok {
				return
			}
			timings, _ := st["timings"].(map[string]any)
			for _, k := range []string{"evalTotalTime", "resultSortTime", "queryPreparationTime", "innerEvalTime", "execQueueTime", "execTotalTime"} {
				if _, ok := timings[k]; !ok {
					t.Errorf("stats.timings lacks %s: %v", k, timings)
				}
			}
			samples, _ := st["samples"].(map[string]any)
			if n, _ := samples["totalQueryableSamples"].(float64); n <= 0 {
				t.Errorf("stats.samples.totalQueryableSamples = %v, want > 0", samples["totalQueryableSamples"])
			}
			_, hasPerStep := samples["totalQueryableSamplesPerStep"]
			if hasPerStep != tc.perStep {
				t.Errorf("per-step stats present %v, want %v: %v", hasPerStep, tc.perStep, samples)
			}
		})
	}
}
