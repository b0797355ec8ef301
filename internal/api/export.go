package api

import (
	"bufio"
	"math"
	"net/http"
	"strconv"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// serveExport answers /api/v1/export in VictoriaMetrics' JSON-lines
// format, one series a line:
//
//	{"metric":{"__name__":"up","job":"a"},"values":[1,0],"timestamps":[1000,2000]}
//
// match[] (default: every series), start and end (default: all time)
// choose what is exported. Lines are written as series are read, so the
// answer is as large as the data and the memory it takes is one series'.
// A stale marker is written as null, any other NaN as "NaN", infinities
// as "Infinity" and "-Infinity", as VictoriaMetrics writes and reads
// them, so that what is exported comes back by /api/v1/import as it was.
// Native histogram samples have no place in the format and are left out.
func (a *API) serveExport(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		a.writeError(w, badData(err))
		return
	}
	selectors := r.Form["match[]"]
	if len(selectors) == 0 {
		selectors = []string{`{__name__!=""}`}
	}
	mint, maxt, aerr := timeRange(r)
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	sets, err := parseMatchers(a.parser, selectors)
	if err != nil {
		a.writeError(w, invalidParam("match[]", err))
		return
	}
	q, err := a.queryable.Querier(mint, maxt)
	if err != nil {
		a.writeError(w, classify(err))
		return
	}
	defer q.Close()
	ctx := r.Context()
	hints := &storage.SelectHints{Start: mint, End: maxt}
	set := selectUnion(ctx, q, hints, sets)

	w.Header().Set("Content-Type", "application/stream+json")
	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		it    chunkenc.Iterator
		ts    []int64
		vs    []float64
		line  []byte
		wrote bool
	)
	for set.Next() {
		s := set.At()
		ts, vs = ts[:0], vs[:0]
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			t, v := it.At()
			if t < mint || t > maxt {
				continue
			}
			ts, vs = append(ts, t), append(vs, v)
		}
		if err := it.Err(); err != nil {
			a.exportFailed(w, bw, wrote, err)
			return
		}
		if len(ts) == 0 {
			continue
		}
		line = appendExportLine(line[:0], s, ts, vs)
		if _, err := bw.Write(line); err != nil {
			return // the client is gone
		}
		wrote = true
	}
	if err := set.Err(); err != nil {
		a.exportFailed(w, bw, wrote, err)
		return
	}
	_ = bw.Flush()
}

// exportFailed ends an export that could not read on: with an error
// answer if nothing was sent yet, else by cutting the stream short with
// a line that is not JSON, so that the client cannot take a part for the
// whole.
func (a *API) exportFailed(w http.ResponseWriter, bw *bufio.Writer, wrote bool, err error) {
	a.logger.Error("export", "err", err)
	if !wrote {
		a.writeError(w, classify(err))
		return
	}
	_, _ = bw.WriteString("export failed: " + strconv.Quote(err.Error()) + "\n")
	_ = bw.Flush()
}

// appendExportLine appends series s's line.
func appendExportLine(dst []byte, s storage.Series, ts []int64, vs []float64) []byte {
	dst = append(dst, `{"metric":`...)
	dst = appendLabels(dst, s.Labels())
	dst = append(dst, `,"values":[`...)
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch {
		case value.IsStaleNaN(v):
			dst = append(dst, "null"...)
		case math.IsNaN(v):
			dst = append(dst, `"NaN"`...)
		case math.IsInf(v, 1):
			dst = append(dst, `"Infinity"`...)
		case math.IsInf(v, -1):
			dst = append(dst, `"-Infinity"`...)
		default:
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		}
	}
	dst = append(dst, `],"timestamps":[`...)
	for i, t := range ts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, "]}\n"...)
}
