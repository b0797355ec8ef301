package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promMetrics and vmMetrics are excerpts of the rule metrics Prometheus'
// rule manager and vmalert expose, in their own shapes: vmalert writes
// summaries without TYPE lines.
const promMetrics = `# HELP prometheus_rule_group_last_duration_seconds The duration of the last rule group evaluation.
# TYPE prometheus_rule_group_last_duration_seconds gauge
prometheus_rule_group_last_duration_seconds{rule_group="/r.yml;a"} %s
prometheus_rule_group_last_duration_seconds{rule_group="/r.yml;b"} 0.5
# TYPE prometheus_rule_group_last_evaluation_timestamp_seconds gauge
prometheus_rule_group_last_evaluation_timestamp_seconds{rule_group="/r.yml;a"} %s
prometheus_rule_group_last_evaluation_timestamp_seconds{rule_group="/r.yml;b"} 1000
# TYPE prometheus_rule_group_iterations_missed_total counter
prometheus_rule_group_iterations_missed_total{rule_group="/r.yml;a"} %s
prometheus_rule_group_iterations_missed_total{rule_group="/r.yml;b"} 0
# TYPE prometheus_rule_evaluation_failures_total counter
prometheus_rule_evaluation_failures_total{rule_group="/r.yml;a"} 2
`

const vmMetrics = `vmalert_iteration_duration_seconds{group="a",file="/r.yml",quantile="0.5"} 0.2
vmalert_iteration_duration_seconds_sum{group="a",file="/r.yml"} %s
vmalert_iteration_duration_seconds_count{group="a",file="/r.yml"} %s
vmalert_iteration_duration_seconds_sum{group="b",file="/r.yml"} 1
vmalert_iteration_duration_seconds_count{group="b",file="/r.yml"} 4
vmalert_iteration_missed_total{group="a",file="/r.yml"} %s
vmalert_execution_errors_total 3
`

func parseRuleMetrics(t *testing.T, format string, args ...string) ruleMetrics {
	t.Helper()
	text := format
	for _, a := range args {
		text = strings.Replace(text, "%s", a, 1)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	m := ruleMetrics{groups: map[string]groupReading{}}
	m.add(fams)
	return m
}

func TestRuleMetrics(t *testing.T) {
	// Prometheus: group a evaluated once more between the readings, in
	// 0.25s; b did not.
	p0 := parseRuleMetrics(t, promMetrics, "0.1", "1000", "1")
	p1 := parseRuleMetrics(t, promMetrics, "0.25", "1015", "2")
	if len(p1.groups) != 2 || p1.missed != 2 || p1.failures != 2 {
		t.Fatalf("Prometheus reading %+v", p1)
	}
	if got := p1.evaluationsSince(p0, nil); !slices.Equal(got, []float64{0.25}) {
		t.Fatalf("Prometheus evaluations %v, want [0.25]", got)
	}
	// vmalert: a evaluated twice, in 0.6s together; b not at all.
	v0 := parseRuleMetrics(t, vmMetrics, "1.5", "10", "0")
	v1 := parseRuleMetrics(t, vmMetrics, "2.1", "12", "1")
	if len(v1.groups) != 2 || v1.missed != 1 || v1.failures != 3 {
		t.Fatalf("vmalert reading %+v", v1)
	}
	got := v1.evaluationsSince(v0, nil)
	if len(got) != 2 || got[0] < 0.2999 || got[0] > 0.3001 || got[1] != got[0] {
		t.Fatalf("vmalert evaluations %v, want two of 0.3", got)
	}
}
