package workload

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Rule set sizes: RecordingRules and AlertingRules in RuleGroups groups,
// over ruleSlices slices of the series, each slice one region and one
// cluster (five of the six regions and every cluster).
const (
	RecordingRules = 500
	AlertingRules  = 200
	RuleGroups     = 10
	ruleSlices     = 25
)

// RuleLabels is the fewest labels per series the rule set needs: the node
// CPU series, with two identifying labels, reach cluster only at seven
// (instance, cpu, mode, job, region, zone, cluster).
const RuleLabels = 7

// RuleFile returns a rule file in Prometheus' format over the generated
// series, evaluated every interval: per slice, 20 recording rules (CPU,
// network, disk, memory, filesystem and request rates, sums and ratios,
// and latency quantiles of the request histogram) and 8 alerting rules
// (CPU, memory, latency and a filesystem forecast over thresholds), slice s
// in group s mod RuleGroups. The same file runs on every server, so
// that each does the same work over the same data.
func RuleFile(interval time.Duration) string {
	var b strings.Builder
	b.WriteString("groups:\n")
	regions, clusters := topology[0].values, topology[2].values
	for g := range RuleGroups {
		fmt.Fprintf(&b, "- name: slices%d\n  interval: %s\n  rules:\n", g, model.Duration(interval))
		for s := g; s < ruleSlices; s += RuleGroups {
			sel := fmt.Sprintf(`region="%s",cluster="%s"`, regions[s/len(clusters)], clusters[s%len(clusters)])
			writeSliceRules(&b, sel)
		}
	}
	return b.String()
}

// writeSliceRules writes one slice's rules, its series selected by sel.
func writeSliceRules(b *strings.Builder, sel string) {
	rec := func(name, expr string) {
		fmt.Fprintf(b, "  - record: %s\n    expr: '%s'\n", name, fmt.Sprintf(expr, any(sel)))
	}
	rec("instance:node_cpu:rate5m", `sum by (instance) (rate(node_cpu_seconds_total{%s,mode!="idle"}[5m]))`)
	rec("mode:node_cpu:rate5m", `sum by (region, cluster, mode) (rate(node_cpu_seconds_total{%s}[5m]))`)
	rec("team:node_cpu_utilisation:avg5m", `avg by (team) (1 - rate(node_cpu_seconds_total{%s,mode="idle"}[5m]))`)
	rec("cluster:node_cpu:increase1h", `sum by (region, cluster) (increase(node_cpu_seconds_total{%s,mode!="idle"}[1h]))`)
	rec("instance:node_network_receive_bytes:rate5m", `sum by (instance) (rate(node_network_receive_bytes_total{%s,device!="lo"}[5m]))`)
	rec("instance:node_network_transmit_bytes:rate5m", `sum by (instance) (rate(node_network_transmit_bytes_total{%s,device!="lo"}[5m]))`)
	rec("cluster:node_network_receive_packets:rate1m", `sum by (region, cluster) (rate(node_network_receive_packets_total{%s}[1m]))`)
	rec("device:node_disk_read_bytes:rate5m", `sum by (region, cluster, device) (rate(node_disk_read_bytes_total{%s}[5m]))`)
	rec("device:node_disk_written_bytes:rate5m", `sum by (region, cluster, device) (rate(node_disk_written_bytes_total{%s}[5m]))`)
	rec("instance_device:node_disk_io_time:rate1m", `rate(node_disk_io_time_seconds_total{%s}[1m])`)
	rec("instance:node_memory_utilisation:ratio", `1 - node_memory_MemAvailable_bytes{%[1]s} / node_memory_MemTotal_bytes{%[1]s}`)
	rec("env:node_load1:avg", `avg by (region, cluster, env) (node_load1{%s})`)
	rec("mountpoint:node_filesystem_usage:max", `max by (region, cluster, mountpoint) (1 - node_filesystem_avail_bytes{%[1]s} / node_filesystem_size_bytes{%[1]s})`)
	rec("service:http_requests:rate5m", `sum by (service) (rate(http_request_duration_seconds_count{%s}[5m]))`)
	rec("service:http_request_duration_seconds:mean5m", `sum by (service) (rate(http_request_duration_seconds_sum{%[1]s}[5m])) / sum by (service) (rate(http_request_duration_seconds_count{%[1]s}[5m]))`)
	for _, q := range []string{"0.5", "0.9", "0.99"} {
		rec("cluster:http_request_duration_seconds:p"+strings.TrimPrefix(q, "0."), `histogram_quantile(`+q+`, sum by (region, cluster, le) (rate(http_request_duration_seconds_bucket{%s}[5m])))`)
	}
	rec("service:http_request_duration_seconds:p99", `histogram_quantile(0.99, sum by (service, le) (rate(http_request_duration_seconds_bucket{%s}[5m])))`)
	rec("cluster:http_requests:increase1h", `sum by (region, cluster) (increase(http_request_duration_seconds_count{%s}[1h]))`)

	alert := func(name, expr, dur string) {
		fmt.Fprintf(b, "  - alert: %s\n    expr: '%s'\n    for: %s\n    labels: {severity: page}\n    annotations: {summary: \"{{ $labels.instance }} at {{ $value }}\"}\n", name, fmt.Sprintf(expr, any(sel)), dur)
	}
	for k, th := range []string{"0.1", "0.2", "0.5"} {
		alert(fmt.Sprintf("HostCPUBusy%d", k), `sum by (instance) (rate(node_cpu_seconds_total{%s,mode!="idle"}[5m])) > `+th, "5m")
	}
	alert("HostMemoryLow", `node_memory_MemAvailable_bytes{%[1]s} / node_memory_MemTotal_bytes{%[1]s} < 0.1`, "5m")
	alert("HostDiskBusy", `rate(node_disk_io_time_seconds_total{%s}[5m]) > 0.5`, "10m")
	alert("FilesystemFillingUp", `predict_linear(node_filesystem_avail_bytes{%s}[1h], 4 * 3600) < 0`, "10m")
	for k, th := range []string{"0.25", "1"} {
		alert(fmt.Sprintf("RequestLatencyHigh%d", k), `histogram_quantile(0.99, sum by (instance, le) (rate(http_request_duration_seconds_bucket{%s}[5m]))) > `+th, "5m")
	}
}
