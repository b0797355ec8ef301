package api

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
)

// TSDBStatusSource answers /api/v1/status/tsdb.
type TSDBStatusSource interface {
	// TSDBStatus returns the head's statistics and the limit largest
	// entries of each cardinality list.
	TSDBStatus(limit int) (TSDBStatus, error)
}

// TSDBStatus is the data of /api/v1/status/tsdb, as Prometheus shapes it:
// the head's size and the label names, values and pairs of its series
// that take the most.
type TSDBStatus struct {
	HeadStats                   HeadStats
	SeriesCountByMetricName     []TSDBStat
	LabelValueCountByLabelName  []TSDBStat
	MemoryInBytesByLabelName    []TSDBStat
	SeriesCountByLabelValuePair []TSDBStat
}

// HeadStats are the head's totals.
type HeadStats struct {
	NumSeries     uint64
	NumLabelPairs int
	ChunkCount    int64
	// MinTime and MaxTime bound the head's samples, in milliseconds.
	MinTime, MaxTime int64
}

// TSDBStat is an entry of a cardinality list.
type TSDBStat struct {
	Name  string
	Value uint64
}

// maxTSDBStatusLimit is Prometheus' bound on limit.
const maxTSDBStatusLimit = 10000

func (a *API) serveTSDBStatus(r *http.Request) result {
	limit := 10
	if s := r.FormValue("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return errResult(badData(errors.New("limit must be a positive number")))
		}
		if limit > maxTSDBStatusLimit {
			return errResult(badData(fmt.Errorf("limit must not exceed %d", maxTSDBStatusLimit)))
		}
	}
	if a.tsdbStatus == nil {
		return result{data: &TSDBStatus{}}
	}
	st, err := a.tsdbStatus.TSDBStatus(limit)
	if err != nil {
		return errResult(&apiError{typ: errorInternal, err: err})
	}
	return result{data: &st}
}

func (s *TSDBStatus) appendJSON(dst []byte) ([]byte, error) {
	h := s.HeadStats
	dst = append(dst, `{"headStats":{"numSeries":`...)
	dst = strconv.AppendUint(dst, h.NumSeries, 10)
	dst = append(dst, `,"numLabelPairs":`...)
	dst = strconv.AppendInt(dst, int64(h.NumLabelPairs), 10)
	dst = append(dst, `,"chunkCount":`...)
	dst = strconv.AppendInt(dst, h.ChunkCount, 10)
	dst = append(dst, `,"minTime":`...)
	dst = strconv.AppendInt(dst, h.MinTime, 10)
	dst = append(dst, `,"maxTime":`...)
	dst = strconv.AppendInt(dst, h.MaxTime, 10)
	dst = append(dst, '}')
	for _, l := range [...]struct {
		key   string
		stats []TSDBStat
	}{
		{"seriesCountByMetricName", s.SeriesCountByMetricName},
		{"labelValueCountByLabelName", s.LabelValueCountByLabelName},
		{"memoryInBytesByLabelName", s.MemoryInBytesByLabelName},
		{"seriesCountByLabelValuePair", s.SeriesCountByLabelValuePair},
	} {
		dst = append(dst, ',')
		dst = appendString(dst, l.key)
		dst = append(dst, ":["...)
		for i, st := range l.stats {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendString(dst, st.Name)
			dst = append(dst, `,"value":`...)
			dst = strconv.AppendUint(dst, st.Value, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// CardinalityLists computes the four lists of a TSDBStatus, limit entries
// each, from the label sets of a store's series, as Prometheus does from
// its head's postings:
//
//   - series by metric name;
//   - distinct values by label name;
//   - by label name, the memory its labels take over all series
//     (labels.SizeOfLabels, as Prometheus counts it);
//   - series by label pair ("name=value").
//
// Entries are ordered by value, largest first, ties by name.
func CardinalityLists(series iter.Seq[labels.Labels], limit int) (byMetric, valuesByName, bytesByName, byPair []TSDBStat) {
	pairs := map[string]map[string]uint64{} // name -> value -> series
	for lset := range series {
		lset.Range(func(l labels.Label) {
			vals := pairs[l.Name]
			if vals == nil {
				vals = map[string]uint64{}
				pairs[l.Name] = vals
			}
			vals[l.Value]++
		})
	}
	var metric, values, bytes, pair []TSDBStat
	for name, vals := range pairs {
		values = append(values, TSDBStat{name, uint64(len(vals))})
		var size uint64
		for v, n := range vals {
			if name == labels.MetricName {
				metric = append(metric, TSDBStat{v, n})
			}
			pair = append(pair, TSDBStat{name + "=" + v, n})
			size += labels.SizeOfLabels(name, v, n)
		}
		bytes = append(bytes, TSDBStat{name, size})
	}
	return topStats(metric, limit), topStats(values, limit), topStats(bytes, limit), topStats(pair, limit)
}

func topStats(stats []TSDBStat, limit int) []TSDBStat {
	slices.SortFunc(stats, func(a, b TSDBStat) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return stats[:min(limit, len(stats))]
}
