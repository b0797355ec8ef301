package workload

import (
	"strconv"
)

// A scrape target's exposition: the series of whole node catalogs (56
// series each, the same templates as the remote-write data), told apart
// by a shard label, in Prometheus' text format, family by family with
// HELP and TYPE lines, as a node exporter writes it. Sample values are
// those of Value at the scrape's index, so counters move between scrapes.

// family is one metric family of the catalog: its name as the TYPE line
// gives it and its templates in the order they are written.
type family struct {
	name, help string
	typ        MetricType
	templates  []int
}

var families = buildFamilies()

func buildFamilies() []family {
	var fs []family
	index := map[string]int{}
	for i, t := range catalog {
		name := t.name
		if t.typ == Histogram {
			name = histogramBase(t.name)
		}
		j, ok := index[name]
		if !ok {
			j = len(fs)
			index[name] = j
			fs = append(fs, family{name: name, help: t.help, typ: t.typ})
		}
		fs[j].templates = append(fs[j].templates, i)
	}
	return fs
}

// histogramBase strips a histogram series name's _bucket, _sum or _count.
func histogramBase(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
			return name[:len(name)-len(suffix)]
		}
	}
	return name
}

// TargetShards returns how many node catalogs a target exposes to have
// at least series series.
func TargetShards(series int) int {
	return max(1, (series+len(catalog)-1)/len(catalog))
}

// AppendExposition appends scrape k of target (0, 1, ...) with shards
// node catalogs to dst, in the text format (version 0.0.4).
func AppendExposition(dst []byte, seed uint64, target uint64, shards int, k int64) []byte {
	for _, f := range families {
		dst = append(dst, "# HELP "...)
		dst = append(dst, f.name...)
		dst = append(dst, ' ')
		dst = append(dst, f.help...)
		dst = append(dst, "\n# TYPE "...)
		dst = append(dst, f.name...)
		switch f.typ {
		case Counter:
			dst = append(dst, " counter\n"...)
		case Gauge:
			dst = append(dst, " gauge\n"...)
		case Histogram:
			dst = append(dst, " histogram\n"...)
		}
		for s := range shards {
			inst := target*uint64(shards) + uint64(s)
			for _, ti := range f.templates {
				t := &catalog[ti]
				dst = append(dst, t.name...)
				dst = append(dst, '{')
				for _, d := range t.dims {
					dst = append(dst, d.Name...)
					dst = append(dst, `="`...)
					dst = append(dst, d.Value...)
					dst = append(dst, `",`...)
				}
				dst = append(dst, `shard="`...)
				dst = strconv.AppendInt(dst, int64(s), 10)
				dst = append(dst, `"} `...)
				dst = strconv.AppendFloat(dst, Value(seed, inst*uint64(len(catalog))+uint64(ti), k), 'g', -1, 64)
				dst = append(dst, '\n')
			}
		}
	}
	return dst
}
