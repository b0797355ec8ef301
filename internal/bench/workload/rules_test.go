package workload

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestRuleFile parses the rule file as Prometheus does and checks its
// sizes, and that every selector of every rule matches generated series
// at the fewest labels the rule set allows and at the default: a rule
// over labels the series lack would cost the servers nothing.
func TestRuleFile(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	rgs, errs := rulefmt.Parse([]byte(RuleFile(15*time.Second)), false, model.UTF8Validation, p, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(rgs.Groups) != RuleGroups {
		t.Fatalf("%d groups, want %d", len(rgs.Groups), RuleGroups)
	}
	var recording, alerting int
	var exprs []parser.Expr
	for _, g := range rgs.Groups {
		if time.Duration(g.Interval) != 15*time.Second {
			t.Errorf("group %s: interval %v, want 15s", g.Name, g.Interval)
		}
		for _, r := range g.Rules {
			if r.Record != "" {
				recording++
			} else {
				alerting++
			}
			e, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			exprs = append(exprs, e)
		}
	}
	if recording != RecordingRules || alerting != AlertingRules {
		t.Fatalf("%d recording and %d alerting rules, want %d and %d", recording, alerting, RecordingRules, AlertingRules)
	}
	// 600 instances hold every region and cluster many times over.
	const ids = 600 * 56
	for _, k := range []int{RuleLabels, DefaultOptions().Labels} {
		byName := map[string][]labels.Labels{}
		var ls []Label
		for id := range uint64(ids) {
			ls = AppendLabels(ls[:0], 1, id, k)
			b := labels.NewScratchBuilder(len(ls))
			for _, l := range ls {
				b.Add(l.Name, l.Value)
			}
			l := b.Labels()
			byName[l.Get(labels.MetricName)] = append(byName[l.Get(labels.MetricName)], l)
		}
		for _, e := range exprs {
			for _, sel := range parser.ExtractSelectors(e) {
				if !matchesAny(byName, sel) {
					t.Errorf("labels %d: no series matches %v in %s", k, sel, e)
				}
			}
		}
	}
}

// matchesAny reports whether a series of byName, the series by metric
// name, matches every matcher of ms; the rules name their metrics.
func matchesAny(byName map[string][]labels.Labels, ms []*labels.Matcher) bool {
	var name string
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	for _, s := range byName[name] {
		ok := true
		for _, m := range ms {
			if !m.Matches(s.Get(m.Name)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
