package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/rules"
)

// The endpoints of rules and alerting: /api/v1/rules, /api/v1/alerts and
// /api/v1/alertmanagers, in Prometheus' shapes (web/api/v1), field for
// field, with its parameters and messages, so that Grafana's alerting
// views and promtool read them.

// RulesSource is the rule groups in effect and their state.
type RulesSource interface {
	RuleGroups() []*rules.Group
	AlertingRules() []*rules.AlertingRule
}

// AlertmanagerSource is the Alertmanagers alerts are sent to, and those
// that discovery found but relabelling dropped.
type AlertmanagerSource interface {
	Alertmanagers() []*url.URL
	DroppedAlertmanagers() []*url.URL
}

type alertJSON struct {
	Labels          labels.Labels `json:"labels"`
	Annotations     labels.Labels `json:"annotations"`
	State           string        `json:"state"`
	ActiveAt        *time.Time    `json:"activeAt,omitempty"`
	KeepFiringSince *time.Time    `json:"keepFiringSince,omitempty"`
	Value           string        `json:"value"`
}

func alertsJSON(as []*rules.Alert) []*alertJSON {
	out := make([]*alertJSON, len(as))
	for i, a := range as {
		out[i] = &alertJSON{
			Labels:      a.Labels,
			Annotations: a.Annotations,
			State:       a.State.String(),
			ActiveAt:    &a.ActiveAt,
			Value:       strconv.FormatFloat(a.Value, 'e', -1, 64),
		}
		if !a.KeepFiringSince.IsZero() {
			out[i].KeepFiringSince = &a.KeepFiringSince
		}
	}
	return out
}

// alerts answers /api/v1/alerts: the pending and firing alerts of every
// alerting rule.
func (a *API) alerts(*http.Request) result {
	all := []*alertJSON{}
	if a.rules != nil {
		for _, r := range a.rules.AlertingRules() {
			all = append(all, alertsJSON(r.ActiveAlerts())...)
		}
	}
	return result{data: jsonData{struct {
		Alerts []*alertJSON `json:"alerts"`
	}{all}}}
}

type ruleGroupJSON struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Alerting and recording rules in one list, in the group's order.
	Rules          []any     `json:"rules"`
	Interval       float64   `json:"interval"`
	Limit          int       `json:"limit"`
	EvaluationTime float64   `json:"evaluationTime"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

type alertingRuleJSON struct {
	State          string           `json:"state"`
	Name           string           `json:"name"`
	Query          string           `json:"query"`
	Duration       float64          `json:"duration"`
	KeepFiringFor  float64          `json:"keepFiringFor"`
	Labels         labels.Labels    `json:"labels"`
	Annotations    labels.Labels    `json:"annotations"`
	Alerts         []*alertJSON     `json:"alerts"`
	Health         rules.RuleHealth `json:"health"`
	LastError      string           `json:"lastError,omitempty"`
	EvaluationTime float64          `json:"evaluationTime"`
	LastEvaluation time.Time        `json:"lastEvaluation"`
	Type           string           `json:"type"`
}

type recordingRuleJSON struct {
	Name           string           `json:"name"`
	Query          string           `json:"query"`
	Labels         labels.Labels    `json:"labels"`
	Health         rules.RuleHealth `json:"health"`
	LastError      string           `json:"lastError,omitempty"`
	EvaluationTime float64          `json:"evaluationTime"`
	LastEvaluation time.Time        `json:"lastEvaluation"`
	Type           string           `json:"type"`
}

// rulesQuery is what a /api/v1/rules request asks for.
type rulesQuery struct {
	names, groups, files map[string]bool
	matchers             [][]*labels.Matcher
	alerting, recording  bool
	excludeAlerts        bool
	// groupLimit is how many groups a page holds, 0 for no paging;
	// nextToken the token of the page's first group.
	groupLimit int
	nextToken  string
}

func (a *API) parseRulesQuery(r *http.Request) (rulesQuery, *apiError) {
	set := func(vs []string) map[string]bool {
		m := make(map[string]bool, len(vs))
		for _, v := range vs {
			m[v] = true
		}
		return m
	}
	q := rulesQuery{names: set(r.Form["rule_name[]"]), groups: set(r.Form["rule_group[]"]), files: set(r.Form["file[]"])}
	var err error
	if len(r.Form["match[]"]) > 0 {
		if q.matchers, err = parseMatchers(a.parser, r.Form["match[]"]); err != nil {
			return q, badData(err)
		}
	}
	// As Prometheus, these come from the URL alone.
	u := r.URL.Query()
	switch typ := strings.ToLower(u.Get("type")); typ {
	case "":
		q.alerting, q.recording = true, true
	case "alert":
		q.alerting = true
	case "record":
		q.recording = true
	default:
		return q, invalidParam("type", fmt.Errorf("not supported value %q", typ))
	}
	if s := strings.ToLower(u.Get("exclude_alerts")); s != "" {
		if q.excludeAlerts, err = strconv.ParseBool(s); err != nil {
			return q, invalidParam("exclude_alerts", fmt.Errorf("error converting exclude_alerts: %w", err))
		}
	}
	limit, token := u.Get("group_limit"), u.Get("group_next_token")
	if token != "" && limit == "" {
		return q, invalidParam("group_next_token", errors.New("group_limit needs to be present in order to paginate over the groups"))
	}
	if limit != "" {
		n, err := strconv.ParseInt(limit, 10, 32)
		if err != nil {
			return q, invalidParam("group_limit", fmt.Errorf("group_limit needs to be a valid number: %w", err))
		}
		if n <= 0 {
			return q, invalidParam("group_limit", errors.New("group_limit needs to be greater than 0"))
		}
		q.groupLimit, q.nextToken = int(n), token
	}
	return q, nil
}

// groupToken is the page token of a group, as Prometheus makes it.
func groupToken(file, name string) string {
	h := sha256.Sum256([]byte(file + ";" + name))
	return hex.EncodeToString(h[:])
}

// rules answers /api/v1/rules: the groups and their rules, filtered by
// the request, a page at a time if it asks for pages.
func (a *API) rulesList(r *http.Request) result {
	q, apiErr := a.parseRulesQuery(r)
	if apiErr != nil {
		return errResult(apiErr)
	}
	var res struct {
		Groups    []*ruleGroupJSON `json:"groups"`
		NextToken string           `json:"groupNextToken,omitempty"`
	}
	res.Groups = []*ruleGroupJSON{}
	var groups []*rules.Group
	if a.rules != nil {
		groups = a.rules.RuleGroups()
	}
	found := q.nextToken == ""
	for _, g := range groups {
		if !found {
			if groupToken(g.File(), g.Name()) != q.nextToken {
				continue
			}
			found = true
		}
		if (len(q.groups) > 0 && !q.groups[g.Name()]) || (len(q.files) > 0 && !q.files[g.File()]) {
			continue
		}
		jg := &ruleGroupJSON{
			Name:           g.Name(),
			File:           g.File(),
			Rules:          []any{},
			Interval:       g.Interval().Seconds(),
			Limit:          g.Limit(),
			EvaluationTime: g.GetEvaluationTime().Seconds(),
			LastEvaluation: g.GetLastEvaluation(),
		}
		for _, rule := range g.Rules(q.matchers...) {
			if len(q.names) > 0 && !q.names[rule.Name()] {
				continue
			}
			if jr := ruleJSON(rule, q); jr != nil {
				jg.Rules = append(jg.Rules, jr)
			}
		}
		if len(jg.Rules) == 0 {
			continue // every rule filtered out
		}
		if q.groupLimit > 0 && len(res.Groups) == q.groupLimit {
			res.NextToken = groupToken(g.File(), g.Name())
			break
		}
		res.Groups = append(res.Groups, jg)
	}
	if !found {
		return errResult(invalidParam("group_next_token", fmt.Errorf("invalid group_next_token '%v'. were rule groups changed?", q.nextToken)))
	}
	return result{data: jsonData{res}}
}

// ruleJSON is rule as /api/v1/rules shows it, or nil if q leaves out its
// type.
func ruleJSON(rule rules.Rule, q rulesQuery) any {
	lastError := ""
	if err := rule.LastError(); err != nil {
		lastError = err.Error()
	}
	switch rule := rule.(type) {
	case *rules.AlertingRule:
		if !q.alerting {
			return nil
		}
		var active []*alertJSON
		if !q.excludeAlerts {
			active = alertsJSON(rule.ActiveAlerts())
		}
		return alertingRuleJSON{
			State:          rule.State().String(),
			Name:           rule.Name(),
			Query:          rule.Query().String(),
			Duration:       rule.HoldDuration().Seconds(),
			KeepFiringFor:  rule.KeepFiringFor().Seconds(),
			Labels:         rule.Labels(),
			Annotations:    rule.Annotations(),
			Alerts:         active,
			Health:         rule.Health(),
			LastError:      lastError,
			EvaluationTime: rule.GetEvaluationDuration().Seconds(),
			LastEvaluation: rule.GetEvaluationTimestamp(),
			Type:           "alerting",
		}
	case *rules.RecordingRule:
		if !q.recording {
			return nil
		}
		return recordingRuleJSON{
			Name:           rule.Name(),
			Query:          rule.Query().String(),
			Labels:         rule.Labels(),
			Health:         rule.Health(),
			LastError:      lastError,
			EvaluationTime: rule.GetEvaluationDuration().Seconds(),
			LastEvaluation: rule.GetEvaluationTimestamp(),
			Type:           "recording",
		}
	}
	return nil
}

// alertmanagers answers /api/v1/alertmanagers.
func (a *API) alertmanagers(*http.Request) result {
	type target struct {
		URL string `json:"url"`
	}
	list := func(us []*url.URL) []target {
		out := make([]target, len(us))
		for i, u := range us {
			out[i] = target{u.String()}
		}
		return out
	}
	var active, dropped []*url.URL
	if a.alertmanagerSource != nil {
		active, dropped = a.alertmanagerSource.Alertmanagers(), a.alertmanagerSource.DroppedAlertmanagers()
	}
	return result{data: jsonData{struct {
		Active  []target `json:"activeAlertmanagers"`
		Dropped []target `json:"droppedAlertmanagers"`
	}{list(active), list(dropped)}}}
}
