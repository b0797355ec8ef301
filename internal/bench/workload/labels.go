package workload

import (
	"slices"
	"strconv"
	"strings"
)

// Label is one label of a series.
type Label struct {
	Name, Value string
}

// Label count limits. MinLabels is what keeps every series unique: the
// instance plus a template's up to two identifying labels (cpu and mode,
// mountpoint and fstype). MaxLabels is far above any real series (the
// filler labels past the realistic ones are label_NN) and bounds the cost
// of a typo.
const (
	MinLabels = 3
	MaxLabels = 64
)

// topology is the ordered list of labels a series gets after instance, its
// identifying labels and job, as relabelling in a Kubernetes or cloud
// setup adds them. Each value is chosen per instance, so all series of one
// host agree, as they do for real.
var topology = [...]struct {
	name   string
	values []string
}{
	{"region", []string{"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-south-1", "ap-northeast-1"}},
	{"zone", []string{"a", "b", "c"}}, // appended to the region
	{"cluster", []string{"prod-1", "prod-2", "prod-3", "staging-1", "dev-1"}},
	{"env", []string{"production", "production", "production", "staging", "development"}},
	{"team", []string{"platform", "payments", "search", "storage", "ml", "web", "identity"}},
	{"namespace", []string{"kube-system", "monitoring", "default", "payments", "search", "ingest", "web"}},
	{"service", []string{"api-gateway", "checkout", "indexer", "postgres", "redis", "frontend", "queue", "auth"}},
	{"os", []string{"linux"}},
	{"arch", []string{"amd64", "amd64", "amd64", "arm64"}},
	{"rack", nil}, // r00..r39
}

const (
	// racks per zone in a mid-sized datacenter room.
	racks = 40
	// fillerValues bounds the distinct values of each label_NN filler.
	fillerValues = 16
	// instanceBits is how many bits of an instance number go into its
	// IPv4 address (10.x.y.z); the rest raise the port above 9100.
	instanceBits = 24
)

// source says where a label's value comes from.
type source uint8

const (
	srcName source = iota
	srcInstance
	srcDim
	srcJob
	srcTopology
	srcFiller
)

// slot is one label of a layout: its name and where its value comes from
// (i indexes the template's dims, the topology or the fillers).
type slot struct {
	name string
	src  source
	i    int
}

// layout returns the labels a series of template t has with k labels
// besides __name__, sorted by name: instance, then its identifying dims,
// then job, then topology, then label_NN fillers, cut to k.
func layout(t *template, k int) []slot {
	s := []slot{{"__name__", srcName, 0}, {"instance", srcInstance, 0}}
	for i, d := range t.dims {
		s = append(s, slot{d.Name, srcDim, i})
	}
	s = append(s, slot{"job", srcJob, 0})
	for i, tp := range topology {
		s = append(s, slot{tp.name, srcTopology, i})
	}
	for i := 0; len(s) < k+1; i++ {
		s = append(s, slot{fillerName(i), srcFiller, i})
	}
	s = s[:k+1]
	slices.SortFunc(s, func(a, b slot) int { return strings.Compare(a.name, b.name) })
	return s
}

func fillerName(n int) string {
	if n < 10 {
		return "label_0" + strconv.Itoa(n)
	}
	return "label_" + strconv.Itoa(n)
}

// instance holds the label values all series of one instance share.
type instance struct {
	id     uint64
	addr   string
	topo   [len(topology)]string
	filled bool
}

func (in *instance) fill(seed, id uint64) {
	in.id, in.filled = id, true
	in.addr = instanceAddr(seed, id)
	for i := range topology {
		in.topo[i] = topologyValue(seed, id, i)
	}
}

// labeler computes series labels, caching per-template layouts and the
// last instance's values. It is not safe for concurrent use.
type labeler struct {
	seed    uint64
	k       int
	layouts [][]slot
	last    instance
}

func newLabeler(seed uint64, k int) *labeler {
	l := &labeler{seed: seed, k: k, layouts: make([][]slot, len(catalog))}
	for i := range catalog {
		l.layouts[i] = layout(&catalog[i], k)
	}
	return l
}

// append appends the labels of series id to dst, sorted by name.
func (l *labeler) append(dst []Label, id uint64) []Label {
	ti := id % uint64(len(catalog))
	t := &catalog[ti]
	inst := id / uint64(len(catalog))
	if !l.last.filled || l.last.id != inst {
		l.last.fill(l.seed, inst)
	}
	for _, s := range l.layouts[ti] {
		var v string
		switch s.src {
		case srcName:
			v = t.name
		case srcInstance:
			v = l.last.addr
		case srcDim:
			v = t.dims[s.i].Value
		case srcJob:
			v = t.job
		case srcTopology:
			v = l.last.topo[s.i]
		case srcFiller:
			v = fillerValue(l.seed, inst, s.i)
		}
		dst = append(dst, Label{s.name, v})
	}
	return dst
}

// AppendLabels appends the labels of series id, which has k labels besides
// __name__, sorted by name, to dst and returns it. The values share memory
// with the package's vocabulary; callers must not modify them.
func AppendLabels(dst []Label, seed, id uint64, k int) []Label {
	return newLabeler(seed, k).append(dst, id)
}

// fillerValueStrings are the values of label_NN fillers, v0..v15.
var fillerValueStrings = func() []string {
	s := make([]string, fillerValues)
	for i := range s {
		s[i] = "v" + strconv.Itoa(i)
	}
	return s
}()

func fillerValue(seed, inst uint64, i int) string {
	return fillerValueStrings[hash3(seed, saltTopology, inst, uint64(len(topology)+i))%fillerValues]
}

// topologyValue returns the value of the i-th topology label of instance
// inst.
func topologyValue(seed, inst uint64, i int) string {
	h := hash3(seed, saltTopology, inst, uint64(i))
	switch topology[i].name {
	case "zone":
		region := topologyValue(seed, inst, 0)
		return region + topology[i].values[h%uint64(len(topology[i].values))]
	case "rack":
		r := h % racks
		return "r" + string(rune('0'+r/10)) + string(rune('0'+r%10))
	}
	vs := topology[i].values
	return vs[h%uint64(len(vs))]
}

// instanceAddr returns instance inst's "host:port". Instances are spread
// over 10.0.0.0/8 by an odd multiplier, a bijection modulo 2^24, so no two
// instances share an address and the seed moves all of them.
func instanceAddr(seed, inst uint64) string {
	const mask = 1<<instanceBits - 1
	n := (inst*0x9e3779b1 + mix(seed^saltInstance)) & mask
	port := 9100 + inst>>instanceBits
	b := make([]byte, 0, len("10.255.255.255:65535"))
	b = append(b, "10."...)
	b = strconv.AppendUint(b, n>>16&0xff, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, n>>8&0xff, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, n&0xff, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, port, 10)
	return string(b)
}

// Selector matches every series this package generates and, on a server
// that also scrapes itself, nothing else: no Prometheus, VictoriaMetrics
// or strata self-metric starts with node_ or http_request_duration_seconds_.
const Selector = `{__name__=~"node_.+|http_request_duration_seconds_.+"}`

// MetricNames returns the distinct metric names of the generated series,
// in catalog order.
func MetricNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, t := range catalog {
		if !seen[t.name] {
			seen[t.name] = true
			names = append(names, t.name)
		}
	}
	return names
}

// MetricTypeOf returns the metric type of series id, and its help text.
func MetricTypeOf(id uint64) (MetricType, string) {
	t := &catalog[id%uint64(len(catalog))]
	return t.typ, t.help
}
