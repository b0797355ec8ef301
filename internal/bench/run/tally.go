package run

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
)

// tally is what senders observed. Each sender fills its own; merge adds
// them up afterwards.
type tally struct {
	requests        int64
	samplesSent     int64
	samplesAccepted int64
	bytesSent       int64
	latencies       []time.Duration
	// errors counts failed requests by "HTTP <status>" or "transport";
	// firstError keeps the first message of each kind.
	errors     map[string]int64
	firstError map[string]string
}

func (t *tally) record(r request, res client.WriteResult, err error) {
	t.requests++
	t.samplesSent += int64(r.samples)
	t.bytesSent += int64(len(r.body))
	if err != nil {
		t.fail("transport", err.Error())
		return
	}
	t.latencies = append(t.latencies, res.Latency)
	switch {
	case res.Written >= 0:
		t.samplesAccepted += int64(min(res.Written, r.samples))
	case res.Status/100 == 2:
		t.samplesAccepted += int64(max(r.samples-res.Rejected, 0))
	}
	if res.Status/100 != 2 {
		t.fail("HTTP "+strconv.Itoa(res.Status), res.Body)
	} else if res.Rejected > 0 {
		t.fail("partial success", res.Body)
	}
}

func (t *tally) fail(kind, msg string) {
	if t.errors == nil {
		t.errors, t.firstError = map[string]int64{}, map[string]string{}
	}
	t.errors[kind]++
	if _, ok := t.firstError[kind]; !ok {
		t.firstError[kind] = msg
	}
}

func (t *tally) merge(o *tally) {
	t.requests += o.requests
	t.samplesSent += o.samplesSent
	t.samplesAccepted += o.samplesAccepted
	t.bytesSent += o.bytesSent
	t.latencies = append(t.latencies, o.latencies...)
	for k, n := range o.errors {
		if t.errors == nil {
			t.errors, t.firstError = map[string]int64{}, map[string]string{}
		}
		if _, ok := t.firstError[k]; !ok {
			t.firstError[k] = o.firstError[k]
		}
		t.errors[k] += n
	}
}

func (t *tally) failed() int64 {
	var n int64
	for _, v := range t.errors {
		n += v
	}
	return n
}

// errorSummary describes the failures, one kind per line.
func (t *tally) errorSummary() []string {
	var out []string
	for _, k := range sortedKeys(t.errors) {
		out = append(out, fmt.Sprintf("%d requests failed with %s, first: %q", t.errors[k], k, trimMsg(t.firstError[k])))
	}
	return out
}

func sortedKeys(m map[string]int64) []string { return slices.Sorted(maps.Keys(m)) }

func trimMsg(s string) string {
	const max = 200 // enough of a server's reason to act on
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
