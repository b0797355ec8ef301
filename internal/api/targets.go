package api

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"
)

// The endpoints of scraping: /api/v1/targets, /api/v1/targets/metadata
// and /api/v1/scrape_pools, in Prometheus' shapes (web/api/v1), field
// for field, with its parameters, so that Grafana's and Prometheus' UI
// read them.

// TargetsSource is the scrape targets in effect.
type TargetsSource interface {
	TargetsActive() map[string][]*scrape.Target
	TargetsDropped() map[string][]*scrape.Target
	TargetsDroppedCounts() map[string]int
	ScrapePools() []string
}

type targetJSON struct {
	DiscoveredLabels   labels.Labels       `json:"discoveredLabels"`
	Labels             labels.Labels       `json:"labels"`
	ScrapePool         string              `json:"scrapePool"`
	ScrapeURL          string              `json:"scrapeUrl"`
	GlobalURL          string              `json:"globalUrl"`
	LastError          string              `json:"lastError"`
	LastScrape         time.Time           `json:"lastScrape"`
	LastScrapeDuration float64             `json:"lastScrapeDuration"`
	Health             scrape.TargetHealth `json:"health"`
	ScrapeInterval     string              `json:"scrapeInterval"`
	ScrapeTimeout      string              `json:"scrapeTimeout"`
}

type droppedTargetJSON struct {
	DiscoveredLabels labels.Labels `json:"discoveredLabels"`
	ScrapePool       string        `json:"scrapePool"`
}

// sortedPools returns the pools of targets in order, only pool if it is
// not empty, and how many targets they hold.
func sortedPools(targets map[string][]*scrape.Target, pool string) ([]string, int) {
	pools := make([]string, 0, len(targets))
	n := 0
	for p, ts := range targets {
		if pool != "" && p != pool {
			continue
		}
		pools = append(pools, p)
		n += len(ts)
	}
	slices.Sort(pools)
	return pools, n
}

// targets answers /api/v1/targets: state is active, dropped or any (the
// default), scrapePool names one pool.
func (a *API) targets(r *http.Request) result {
	pool := r.FormValue("scrapePool")
	// An unknown state lists neither, as in Prometheus.
	state := strings.ToLower(r.FormValue("state"))
	showActive := state == "" || state == "any" || state == "active"
	showDropped := state == "" || state == "any" || state == "dropped"
	res := struct {
		ActiveTargets       []*targetJSON        `json:"activeTargets"`
		DroppedTargets      []*droppedTargetJSON `json:"droppedTargets"`
		DroppedTargetCounts map[string]int       `json:"droppedTargetCounts"`
	}{[]*targetJSON{}, []*droppedTargetJSON{}, nil}
	if showDropped {
		res.DroppedTargetCounts = map[string]int{}
	}
	if a.targetSource == nil {
		return result{data: jsonData{res}}
	}
	b := labels.NewBuilder(labels.EmptyLabels())
	if showActive {
		active := a.targetSource.TargetsActive()
		pools, n := sortedPools(active, pool)
		res.ActiveTargets = make([]*targetJSON, 0, n)
		for _, p := range pools {
			for _, t := range active[p] {
				lastErr := ""
				if err := t.LastError(); err != nil {
					lastErr = err.Error()
				}
				res.ActiveTargets = append(res.ActiveTargets, &targetJSON{
					DiscoveredLabels:   t.DiscoveredLabels(b),
					Labels:             t.Labels(b),
					ScrapePool:         p,
					ScrapeURL:          t.URL().String(),
					GlobalURL:          a.globalURL(t.URL()).String(),
					LastError:          lastErr,
					LastScrape:         t.LastScrape(),
					LastScrapeDuration: t.LastScrapeDuration().Seconds(),
					Health:             t.Health(),
					ScrapeInterval:     t.GetValue(model.ScrapeIntervalLabel),
					ScrapeTimeout:      t.GetValue(model.ScrapeTimeoutLabel),
				})
			}
		}
	}
	if showDropped {
		res.DroppedTargetCounts = a.targetSource.TargetsDroppedCounts()
		dropped := a.targetSource.TargetsDropped()
		pools, n := sortedPools(dropped, pool)
		res.DroppedTargets = make([]*droppedTargetJSON, 0, n)
		for _, p := range pools {
			for _, t := range dropped[p] {
				res.DroppedTargets = append(res.DroppedTargets, &droppedTargetJSON{DiscoveredLabels: t.DiscoveredLabels(b), ScrapePool: p})
			}
		}
	}
	return result{data: jsonData{res}}
}

// localHosts are the names a target on this machine goes by.
var localHosts = []string{"localhost", "127.0.0.1", "::1"}

// globalURL is u as a user elsewhere reaches it, by the external URL's
// host: a target on localhost at strata's own port is strata itself,
// reached at the external URL's scheme, host and port; another local
// target is at the external URL's host with its own port. Other targets
// are as they are.
func (a *API) globalURL(u *url.URL) *url.URL {
	if a.externalURL == nil {
		return u
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Hostname(), u.Port()
	}
	if !slices.Contains(localHosts, host) {
		return u
	}
	g := *u
	if _, own, err := net.SplitHostPort(a.listenAddress); err == nil && port == own {
		g.Scheme, g.Host = a.externalURL.Scheme, a.externalURL.Host
		return &g
	}
	g.Host = a.externalURL.Hostname()
	if port != "" {
		g.Host = net.JoinHostPort(g.Host, port)
	}
	return &g
}

type targetMetadataJSON struct {
	Target       labels.Labels    `json:"target"`
	MetricFamily string           `json:"metric,omitempty"`
	Type         model.MetricType `json:"type"`
	Help         string           `json:"help"`
	Unit         string           `json:"unit"`
}

// targetMetadata answers /api/v1/targets/metadata: the metadata the
// active targets exposed at their last scrape, for the targets
// match_target selects, of metric or of every family, at most limit
// entries.
func (a *API) targetMetadata(r *http.Request) result {
	limit, err := parseMetadataLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(badData(err))
	}
	var matchers []*labels.Matcher
	if s := r.FormValue("match_target"); s != "" {
		var err error
		if matchers, err = a.parser.ParseMetricSelector(s); err != nil {
			return errResult(invalidParam("match_target", err))
		}
	}
	metric := r.FormValue("metric")
	res := []targetMetadataJSON{}
	if a.targetSource == nil {
		return result{data: jsonData{res}}
	}
	b := labels.NewBuilder(labels.EmptyLabels())
	active := a.targetSource.TargetsActive()
	pools, _ := sortedPools(active, "")
	for _, p := range pools {
		for _, t := range active[p] {
			if limit >= 0 && len(res) >= limit {
				return result{data: jsonData{res}}
			}
			tl := t.Labels(b)
			if !matchesAll(tl, matchers) {
				continue
			}
			if metric == "" {
				for _, md := range t.ListMetadata() {
					res = append(res, targetMetadataJSON{Target: tl, MetricFamily: md.MetricFamily, Type: md.Type, Help: md.Help, Unit: md.Unit})
				}
				continue
			}
			if md, ok := t.GetMetadata(metric); ok {
				res = append(res, targetMetadataJSON{Target: tl, Type: md.Type, Help: md.Help, Unit: md.Unit})
			}
		}
	}
	return result{data: jsonData{res}}
}

func matchesAll(ls labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// scrapePools answers /api/v1/scrape_pools: the names of the scrape
// pools, sorted.
func (a *API) scrapePools(*http.Request) result {
	pools := []string{}
	if a.targetSource != nil {
		pools = append(pools, a.targetSource.ScrapePools()...)
		slices.Sort(pools)
	}
	return result{data: jsonData{struct {
		ScrapePools []string `json:"scrapePools"`
	}{pools}}}
}
