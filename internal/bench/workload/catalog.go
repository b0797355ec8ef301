package workload

import "strconv"

// MetricType is the type a series' metric family declares (remote-write
// 2.0 sends it as metadata).
type MetricType uint8

const (
	Counter MetricType = iota + 1
	Gauge
	Histogram
)

// valueKind says how a template's sample values evolve.
type valueKind uint8

const (
	// kindCounter grows by about inc units per sample, never decreasing.
	kindCounter valueKind = iota
	// kindGauge wanders in [base, base+amp) units.
	kindGauge
	// kindConstant never changes (totals such as MemTotal).
	kindConstant
	// kindBucket, kindHistSum and kindHistCount are the series of one
	// classic histogram; all of an instance's buckets are computed from
	// one request count so that they stay cumulative.
	kindBucket
	kindHistSum
	kindHistCount
)

// template is one series an instance exposes: a metric name and the
// labels that tell it apart from the instance's other series of the same
// name (cpu and mode, device, le, ...).
type template struct {
	name string
	help string
	typ  MetricType
	job  string
	// dims identify the series within the instance; they come right after
	// instance when labels are cut to fit --labels, so every series stays
	// unique down to MinLabels.
	dims []Label
	kind valueKind
	// inc is the mean counter increment per sample, in units.
	inc uint64
	// base and span bound a gauge's or counter's starting value, in units.
	base, span uint64
	// amp is a gauge's range of variation, in units.
	amp uint64
	// scale divides units into the sample value (100 for values with two
	// decimals, such as CPU seconds and load averages).
	scale float64
	// bucket is the cumulative fraction of requests at or below le.
	bucket float64
}

// bucketBounds and bucketFractions describe the latency histogram every
// "api" instance exposes: Prometheus client libraries' default buckets cut
// to ten, and a request latency distribution with a median near 60ms.
var (
	bucketBounds    = []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"}
	bucketFractions = []float64{0.05, 0.12, 0.30, 0.55, 0.75, 0.90, 0.96, 0.99, 0.998, 1}
)

// meanLatencyMillis makes _sum consistent with the buckets' distribution.
const meanLatencyMillis = 120

// catalog lists the series of one instance. Its size (56) is that of a
// trimmed node exporter plus one HTTP latency histogram: real node
// exporters expose several hundred series, but what matters for the
// servers is the mix of counters, gauges and histograms, the label shapes
// and the value patterns, not the exact count per host.
var catalog = buildCatalog()

func buildCatalog() []template {
	const (
		mib = 1 << 20
		gib = 1 << 30
	)
	var c []template
	modes := []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}
	// Per-sample increments of CPU time in centiseconds for a 15s
	// interval: an idle-heavy two-CPU host.
	modeInc := map[string]uint64{"idle": 1200, "iowait": 15, "irq": 2, "nice": 1, "softirq": 8, "steal": 3, "system": 90, "user": 180}
	for cpu := range 2 {
		for _, m := range modes {
			c = append(c, template{
				name: "node_cpu_seconds_total", help: "Seconds the CPUs spent in each mode.", typ: Counter, job: "node",
				dims: []Label{{"cpu", strconv.Itoa(cpu)}, {"mode", m}},
				kind: kindCounter, inc: modeInc[m], span: 1e9, scale: 100,
			})
		}
	}
	for _, g := range []struct {
		name       string
		base, span uint64
		amp        uint64
		kind       valueKind
	}{
		{"node_memory_MemTotal_bytes", 8 * gib, 56 * gib, 0, kindConstant},
		{"node_memory_MemAvailable_bytes", 2 * gib, 4 * gib, 512 * mib, kindGauge},
		{"node_memory_MemFree_bytes", 256 * mib, 1 * gib, 256 * mib, kindGauge},
		{"node_memory_Cached_bytes", 1 * gib, 4 * gib, 64 * mib, kindGauge},
		{"node_memory_Buffers_bytes", 32 * mib, 256 * mib, 4 * mib, kindGauge},
	} {
		c = append(c, template{
			name: g.name, help: "Memory information field " + g.name[len("node_memory_"):] + ".", typ: Gauge, job: "node",
			kind: g.kind, base: g.base, span: g.span, amp: g.amp, scale: 1,
		})
	}
	for _, n := range []string{"node_load1", "node_load5", "node_load15"} {
		c = append(c, template{
			name: n, help: "Load average.", typ: Gauge, job: "node",
			kind: kindGauge, base: 5, span: 100, amp: 150, scale: 100,
		})
	}
	for _, dev := range []string{"eth0", "lo"} {
		c = append(c,
			template{name: "node_network_receive_bytes_total", help: "Network device statistic receive_bytes.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 1_500_000, span: 1e12, scale: 1},
			template{name: "node_network_transmit_bytes_total", help: "Network device statistic transmit_bytes.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 900_000, span: 1e12, scale: 1},
			template{name: "node_network_receive_packets_total", help: "Network device statistic receive_packets.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 1_200, span: 1e9, scale: 1},
		)
	}
	for _, dev := range []string{"nvme0n1", "sda"} {
		c = append(c,
			template{name: "node_disk_read_bytes_total", help: "The total number of bytes read successfully.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 400_000, span: 1e12, scale: 1},
			template{name: "node_disk_written_bytes_total", help: "The total number of bytes written successfully.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 2_000_000, span: 1e12, scale: 1},
			template{name: "node_disk_io_time_seconds_total", help: "Total seconds spent doing I/Os.", typ: Counter, job: "node",
				dims: []Label{{"device", dev}}, kind: kindCounter, inc: 40, span: 1e8, scale: 1000},
		)
	}
	for _, fs := range []struct{ mount, fstype string }{{"/", "ext4"}, {"/boot", "vfat"}, {"/var", "xfs"}} {
		c = append(c,
			template{name: "node_filesystem_avail_bytes", help: "Filesystem space available to non-root users in bytes.", typ: Gauge, job: "node",
				dims: []Label{{"mountpoint", fs.mount}, {"fstype", fs.fstype}}, kind: kindGauge, base: 1 * gib, span: 100 * gib, amp: 16 * mib, scale: 1},
			template{name: "node_filesystem_size_bytes", help: "Filesystem size in bytes.", typ: Gauge, job: "node",
				dims: []Label{{"mountpoint", fs.mount}, {"fstype", fs.fstype}}, kind: kindConstant, base: 100 * gib, span: 400 * gib, scale: 1},
		)
	}
	c = append(c,
		template{name: "node_boot_time_seconds", help: "Node boot time, in unixtime.", typ: Gauge, job: "node",
			kind: kindConstant, base: 1_700_000_000, span: 50_000_000, scale: 1},
		template{name: "node_memory_Active_bytes", help: "Memory information field Active_bytes.", typ: Gauge, job: "node",
			kind: kindGauge, base: 512 * mib, span: 8 * gib, amp: 32 * mib, scale: 1},
	)
	const hist = "http_request_duration_seconds"
	for i, le := range bucketBounds {
		c = append(c, template{
			name: hist + "_bucket", help: "HTTP request latency.", typ: Histogram, job: "api",
			dims: []Label{{"le", le}}, kind: kindBucket, bucket: bucketFractions[i], scale: 1,
		})
	}
	c = append(c,
		template{name: hist + "_sum", help: "HTTP request latency.", typ: Histogram, job: "api", kind: kindHistSum, scale: 1},
		template{name: hist + "_count", help: "HTTP request latency.", typ: Histogram, job: "api", kind: kindHistCount, scale: 1},
	)
	return c
}

// SeriesPerInstance is how many series one instance (host) exposes; series
// id i belongs to instance i / SeriesPerInstance.
func SeriesPerInstance() int { return len(catalog) }
