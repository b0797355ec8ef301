package server

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// residentCollector splits the process' resident memory, as Linux counts
// it in /proc/self/status, into anonymous pages and pages of files, so
// that an operator can see where RSS goes: the anonymous pages are the Go
// heap (go_memstats_heap_inuse_bytes and the collector's headroom), the
// memory the head holds outside it (strata_head_series_memory_bytes) and
// stacks; the file pages are the head's chunk files and the blocks read
// through mappings (strata_head_chunk_file_bytes, strata_blocks_bytes),
// as far as the kernel keeps them in memory, and the executable's.
type residentCollector struct {
	path       string
	anon, file *prometheus.Desc
}

func newResidentCollector(path string) residentCollector {
	return residentCollector{
		path: path,
		anon: prometheus.NewDesc("strata_process_resident_anonymous_bytes",
			"Resident memory of the process not backed by a file (RssAnon): the Go heap, the head's memory outside it, stacks.", nil, nil),
		file: prometheus.NewDesc("strata_process_resident_file_bytes",
			"Resident memory of the process backed by files (RssFile): pages of the mapped chunk files and blocks, and of the executable.", nil, nil),
	}
}

func (c residentCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.anon
	ch <- c.file
}

func (c residentCollector) Collect(ch chan<- prometheus.Metric) {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return
	}
	anon, file, ok := parseResident(b)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.anon, prometheus.GaugeValue, anon)
	ch <- prometheus.MustNewConstMetric(c.file, prometheus.GaugeValue, file)
}

// parseResident reads RssAnon and RssFile, in bytes, from the text of
// /proc/<pid>/status; ok is false unless it has both.
func parseResident(status []byte) (anon, file float64, ok bool) {
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, rest, found := bytes.Cut(sc.Bytes(), []byte(":"))
		if !found {
			continue
		}
		var dst *float64
		switch string(name) {
		case "RssAnon":
			dst = &anon
		case "RssFile":
			dst = &file
		default:
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, 0, false
		}
		kb, err := strconv.ParseUint(string(fields[0]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		*dst = float64(kb) * 1024
		seen++
	}
	return anon, file, seen == 2
}
