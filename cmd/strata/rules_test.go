package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// TestRulesSurviveKill runs a recording rule and an alert with a long
// `for` every 100 ms and kills the server with SIGKILL three times: every
// recorded sample a query saw before a kill is there after the restart,
// once, and the pending alert's `for` state is restored from
// ALERTS_FOR_STATE, as Prometheus restores it.
func TestRulesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	cfg := filepath.Join(dir, "strata.yml")
	for name, content := range map[string]string{
		rules: `groups:
- name: g
  interval: 100ms
  rules:
  - record: probe:sum
    expr: sum(probe)
  - alert: ProbeUp
    expr: probe > 0
    for: 1h
`,
		cfg: fmt.Sprintf("rule_files: [%q]\n", rules),
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &proc{t: t, bin: buildBinary(t), dir: filepath.Join(dir, "data"), addr: freeAddr(t), args: []string{"--config.file", cfg}}
	s.start()
	// One sample, which the rules see for the five minutes of lookback.
	probe := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "probe"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: time.Now().UnixMilli()}},
	}}}
	if code, body := s.write(probe); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, body)
	}

	// Prometheus restores a pending alert's active time moved on by the
	// time the server was down, so that the downtime does not count
	// towards its `for`: after each restart the alert is active since
	// the first time plus the downtimes so far (each up to a second more,
	// as the state is kept in seconds). Had it not been restored, it
	// would be active since the restart, seconds after that: each round
	// runs four seconds before the kill.
	var first int64
	var down time.Duration
	var seen []float64 // timestamps of probe:sum a query saw
	for round := range 3 {
		seen = s.waitRecorded(len(seen) + 40)
		got := s.pendingSince()
		if round == 0 {
			first = got
		} else if limit := first + int64((down + time.Duration(round)*time.Second).Seconds()) + 1; got < first || got > limit {
			t.Errorf("after restart %d the alert is active since %d, want %d to %d: the first time and the downtime", round, got, first, limit)
		}
		killed := time.Now()
		s.kill()
		s.start()
		down += time.Since(killed)
		after := s.recorded()
		if !containsAll(after, seen) {
			t.Fatalf("after restart %d, of %d recorded samples seen before the kill %d are there", round+1, len(seen), countIn(after, seen))
		}
		for i := 1; i < len(after); i++ {
			if after[i] <= after[i-1] {
				t.Fatalf("recorded samples out of order or repeated at %v", after[i])
			}
		}
	}
}

// recorded returns the timestamps of probe:sum's samples.
func (s *proc) recorded() []float64 {
	s.t.Helper()
	return s.timestamps("probe:sum[1h]")
}

// timestamps returns the timestamps of the samples of the range selector
// sel, of every series it selects.
func (s *proc) timestamps(sel string) []float64 {
	s.t.Helper()
	code, body := s.get("/api/v1/query", url.Values{"query": {sel}})
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || code != http.StatusOK {
		s.t.Fatalf("query: %d %s", code, body)
	}
	var ts []float64
	for _, res := range r.Data.Result {
		for _, v := range res.Values {
			ts = append(ts, v[0].(float64))
		}
	}
	return ts
}

// waitRecorded waits for n recorded samples at least and returns them.
func (s *proc) waitRecorded(n int) []float64 {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ts := s.recorded(); len(ts) >= n {
			return ts
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("fewer than %d recorded samples after 30s; logs:\n%s", n, s.logs.String())
		}
	}
}

// pendingSince returns when the pending ProbeUp alert became active, in
// seconds since the epoch, once it is pending.
func (s *proc) pendingSince() int64 {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := s.get("/api/v1/alerts", nil)
		var r struct {
			Data struct {
				Alerts []struct {
					State    string    `json:"state"`
					ActiveAt time.Time `json:"activeAt"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			s.t.Fatalf("alerts: %s", body)
		}
		if len(r.Data.Alerts) == 1 && r.Data.Alerts[0].State == "pending" {
			return r.Data.Alerts[0].ActiveAt.Unix()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no pending alert after 30s: %s", body)
		}
	}
}

func countIn(have, want []float64) int {
	set := map[float64]bool{}
	for _, v := range have {
		set[v] = true
	}
	n := 0
	for _, v := range want {
		if set[v] {
			n++
		}
	}
	return n
}

func containsAll(have, want []float64) bool { return countIn(have, want) == len(want) }
