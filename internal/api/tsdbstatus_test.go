package api

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// statusSeries are the series of the TSDB status tests: 3 up (job api,
// db, web), 2 http_requests_total (api, with code 200 and 500).
var statusSeries = []labels.Labels{
	labels.FromStrings("__name__", "up", "job", "api"),
	labels.FromStrings("__name__", "up", "job", "db"),
	labels.FromStrings("__name__", "up", "job", "web"),
	labels.FromStrings("__name__", "http_requests_total", "job", "api", "code", "200"),
	labels.FromStrings("__name__", "http_requests_total", "job", "api", "code", "500"),
}

type fixedStatus struct{}

func (fixedStatus) TSDBStatus(limit int) (TSDBStatus, error) {
	st := TSDBStatus{HeadStats: HeadStats{NumSeries: 5, NumLabelPairs: 8, ChunkCount: 12, MinTime: 1000, MaxTime: 299000}}
	st.SeriesCountByMetricName, st.LabelValueCountByLabelName, st.MemoryInBytesByLabelName, st.SeriesCountByLabelValuePair =
		CardinalityLists(slices.Values(statusSeries), limit)
	return st, nil
}

func withTSDBStatus(o *Options) { o.TSDBStatus = fixedStatus{} }

type fixedBlocks []BlockInfo

func (b fixedBlocks) Blocks() []BlockInfo { return b }

func withBlocks(o *Options) {
	o.Blocks = fixedBlocks{
		{ULID: "01M99Y3MW5D4SBMAF4VKRF2S4F", MinTime: 0, MaxTime: 7199999, Series: 5, Samples: 795, Chunks: 10, Bytes: 4096, Level: 1},
		{ULID: "01M99Y3MWDM57HEARZTVQ77BR9", MinTime: 7200000, MaxTime: 36000000 - 1, Series: 7, Samples: 2400, Chunks: 21, Bytes: 81920, Level: 3},
	}
}

func TestCardinalityLists(t *testing.T) {
	byMetric, values, bytes, pairs := CardinalityLists(slices.Values(statusSeries), 10)
	for _, tc := range []struct {
		name string
		got  []TSDBStat
		want string
	}{
		{"series by metric", byMetric, "[{up 3} {http_requests_total 2}]"},
		{"values by name", values, "[{job 3} {__name__ 2} {code 2}]"},
		{"series by pair", pairs, "[{__name__=up 3} {job=api 3} {__name__=http_requests_total 2} {code=200 1} {code=500 1} {job=db 1} {job=web 1}]"},
	} {
		if got := fmt.Sprint(tc.got); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// Memory: each label counted once per series that has it.
	want := map[string]uint64{}
	for _, lset := range statusSeries {
		lset.Range(func(l labels.Label) { want[l.Name] += labels.SizeOfLabels(l.Name, l.Value, 1) })
	}
	for _, st := range bytes {
		if st.Value != want[st.Name] {
			t.Errorf("memory of %s: %d, want %d", st.Name, st.Value, want[st.Name])
		}
	}
	if one, _, _, _ := CardinalityLists(slices.Values(statusSeries), 1); len(one) != 1 || one[0].Name != "up" {
		t.Errorf("limit 1: %v", one)
	}
}
