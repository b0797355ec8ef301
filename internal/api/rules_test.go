package api

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
)

// fakeRules is a RulesSource over groups whose rules were evaluated once,
// at 5 minutes into the fixture, with fixed evaluation durations, so
// that the answers are deterministic.
type fakeRules []*rules.Group

func (f fakeRules) RuleGroups() []*rules.Group { return f }

func (f fakeRules) AlertingRules() []*rules.AlertingRule {
	var out []*rules.AlertingRule
	for _, g := range f {
		out = append(out, g.AlertingRules()...)
	}
	return out
}

// testRules returns two groups over the fixture: one with a recording
// rule and a firing alert (its `for` is 0), one with a pending alert and
// a rule whose query fails.
func testRules(store *fakeStorage) fakeRules {
	p := parser.NewParser(parser.Options{})
	query := rules.EngineQueryFunc(newTestEngine(p), store)
	must := func(s string) parser.Expr {
		e, err := p.ParseExpr(s)
		if err != nil {
			panic(err)
		}
		return e
	}
	ts := time.Unix(300, 0).UTC()
	eval := func(rs ...rules.Rule) []rules.Rule {
		for _, r := range rs {
			_, err := r.Eval(context.Background(), 0, ts, query, nil, 0)
			r.SetLastError(err)
			health := rules.HealthGood
			if err != nil {
				health = rules.HealthBad
			}
			r.SetHealth(health)
			r.SetEvaluationDuration(1500 * time.Microsecond)
			r.SetEvaluationTimestamp(ts)
		}
		return rs
	}
	down := rules.NewAlertingRule("InstanceDown", must(`up == 0`), 0, 0,
		labels.FromStrings("severity", "page"), labels.FromStrings("summary", "{{ $labels.instance }} of {{ $labels.job }} is down"),
		labels.EmptyLabels(), "", true, nil)
	errors := rules.NewAlertingRule("ManyErrors", must(`rate(http_requests_total{code="500"}[5m]) > 0`), 10*time.Minute, 5*time.Minute,
		labels.EmptyLabels(), labels.EmptyLabels(), labels.EmptyLabels(), "", true, nil)
	return fakeRules{
		rules.NewGroup(rules.GroupOptions{Name: "api", File: "/etc/strata/api.yml", Interval: time.Minute, Rules: eval(
			rules.NewRecordingRule("job:up:sum", must(`sum by (job) (up)`), labels.FromStrings("team", "a")),
			down,
		)}),
		rules.NewGroup(rules.GroupOptions{Name: "errors", File: "/etc/strata/errors.yml", Interval: 30 * time.Second, Limit: 10, Rules: eval(
			errors,
			rules.NewRecordingRule("bad:ratio", must(`vector(1) + on() group_left() up`), labels.EmptyLabels()),
		)}),
	}
}

func withRules(o *Options) {
	store, ok := o.Queryable.(*fakeStorage)
	if !ok {
		panic("withRules needs the fixture")
	}
	o.Rules = testRules(store)
}

type fakeAlertmanagers struct{ active, dropped []*url.URL }

func (f fakeAlertmanagers) Alertmanagers() []*url.URL        { return f.active }
func (f fakeAlertmanagers) DroppedAlertmanagers() []*url.URL { return f.dropped }

func withAlertmanagers(o *Options) {
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		if err != nil {
			panic(err)
		}
		return v
	}
	o.Alertmanagers = fakeAlertmanagers{
		active:  []*url.URL{u("http://am-0:9093/api/v2/alerts"), u("http://am-1:9093/api/v2/alerts")},
		dropped: []*url.URL{u("http://am-2:9093/api/v2/alerts")},
	}
}

// rulesGoldenCases are the golden cases of the rules and alerting
// endpoints.
func rulesGoldenCases() []goldenCase {
	return []goldenCase{
		{name: "rules", path: "/api/v1/rules", status: 200},
		{name: "alerts", path: "/api/v1/alerts", status: 200},
		{name: "alertmanagers", path: "/api/v1/alertmanagers", status: 200},
		{name: "rules_all", path: "/api/v1/rules", opts: withRules, status: 200},
		{name: "rules_type_alert", path: "/api/v1/rules", query: q("type", "alert"), opts: withRules, status: 200},
		{name: "rules_type_record", path: "/api/v1/rules", query: q("type", "RECORD"), opts: withRules, status: 200},
		{name: "rules_type_bad", path: "/api/v1/rules", query: q("type", "alerting"), opts: withRules, status: 400},
		{name: "rules_exclude_alerts", path: "/api/v1/rules", query: q("exclude_alerts", "true"), opts: withRules, status: 200},
		{name: "rules_exclude_alerts_bad", path: "/api/v1/rules", query: q("exclude_alerts", "yes please"), opts: withRules, status: 400},
		{name: "rules_by_name", path: "/api/v1/rules", query: q("rule_name[]", "InstanceDown", "rule_name[]", "bad:ratio"), opts: withRules, status: 200},
		{name: "rules_by_group", path: "/api/v1/rules", query: q("rule_group[]", "errors"), opts: withRules, status: 200},
		{name: "rules_by_file", path: "/api/v1/rules", query: q("file[]", "/etc/strata/api.yml"), opts: withRules, status: 200},
		{name: "rules_by_match", path: "/api/v1/rules", query: q("match[]", `{severity="page"}`), opts: withRules, status: 200},
		{name: "rules_bad_match", path: "/api/v1/rules", query: q("match[]", `{severity=~".*"}`), opts: withRules, status: 400},
		{name: "rules_page", path: "/api/v1/rules", query: q("group_limit", "1"), opts: withRules, status: 200},
		{name: "rules_page_next", path: "/api/v1/rules", query: q("group_limit", "1", "group_next_token", groupToken("/etc/strata/errors.yml", "errors")), opts: withRules, status: 200},
		{name: "rules_page_bad_token", path: "/api/v1/rules", query: q("group_limit", "1", "group_next_token", "abc"), opts: withRules, status: 400},
		{name: "rules_page_token_without_limit", path: "/api/v1/rules", query: q("group_next_token", "abc"), opts: withRules, status: 400},
		{name: "rules_page_bad_limit", path: "/api/v1/rules", query: q("group_limit", "0"), opts: withRules, status: 400},
		{name: "rules_post_not_allowed", method: "POST", path: "/api/v1/rules", opts: withRules, status: 405},
		{name: "alerts_active", path: "/api/v1/alerts", opts: withRules, status: 200},
		{name: "alertmanagers_some", path: "/api/v1/alertmanagers", opts: withAlertmanagers, status: 200},
	}
}
