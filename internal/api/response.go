package api

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/util/annotations"
)

// data is the "data" member of a successful response.
type data interface {
	// appendJSON appends the JSON form of the data to dst.
	appendJSON(dst []byte) ([]byte, error)
}

// result is what an endpoint hands back to the code that writes the
// response: data or an error, the annotations gathered on the way, and
// a finalizer to run once the response is written. The finalizer is how
// a querier or query stays open while its strings and points, which it
// owns, are encoded.
type result struct {
	data     data
	err      *apiError
	warnings annotations.Annotations
	finalize func()
}

func errResult(err *apiError) result { return result{err: err} }

// Prometheus caps the annotations it returns per kind at 10, and says how
// many more there were; clients show them to people, so a cap is kind.
const (
	maxWarnings = 10
	maxInfos    = 10
)

// Response bodies are built in pooled buffers. A buffer that grew beyond
// maxPooledBuffer (a very large range query) is dropped rather than
// pooled, so that one big answer does not keep its memory; those pooled
// go once unused for two garbage collections, as a sync.Pool's do. A
// day's panel of 500 series at 240 steps is about 4 MiB.
const (
	initialBuffer   = 4 << 10
	maxPooledBuffer = 4 << 20
)

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, initialBuffer)
	return &b
}}

// writeSuccess writes a success response with d as its data and the
// annotations split into warnings and infos. query is the PromQL text the
// annotations point into, if any.
func (a *API) writeSuccess(w http.ResponseWriter, r *http.Request, d data, ws annotations.Annotations, query string) {
	bp := bufPool.Get().(*[]byte)
	defer putBuffer(bp)

	buf := append((*bp)[:0], `{"status":"success","data":`...)
	buf, err := d.appendJSON(buf)
	if err != nil {
		a.logger.Error("Encode response", "url", r.URL.String(), "err", err)
		a.writeError(w, &apiError{typ: errorInternal, err: fmt.Errorf("encode response: %w", err)})
		return
	}
	warnings, infos := annotationStrings(ws, query)
	if len(warnings) > 0 {
		buf = append(buf, `,"warnings":`...)
		buf = appendStrings(buf, warnings)
	}
	if len(infos) > 0 {
		buf = append(buf, `,"infos":`...)
		buf = appendStrings(buf, infos)
	}
	buf = append(buf, '}')
	*bp = buf
	a.writeBody(w, http.StatusOK, buf)
}

// writeError writes an error response with the status code of its type.
func (a *API) writeError(w http.ResponseWriter, e *apiError) {
	bp := bufPool.Get().(*[]byte)
	defer putBuffer(bp)

	buf := append((*bp)[:0], `{"status":"error","errorType":`...)
	buf = appendString(buf, string(e.typ))
	buf = append(buf, `,"error":`...)
	buf = appendString(buf, e.err.Error())
	buf = append(buf, '}')
	*bp = buf
	a.writeBody(w, e.typ.httpStatus(), buf)
}

func (a *API) writeBody(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if n, err := w.Write(body); err != nil {
		a.logger.Debug("Write response", "bytesWritten", n, "err", err)
	}
}

func putBuffer(bp *[]byte) {
	if cap(*bp) > maxPooledBuffer {
		return
	}
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}

// annotationStrings splits annotations into warnings and infos, each
// sorted (Prometheus leaves them in map order; sorted is stable for
// clients and tests alike) and capped as Prometheus caps them.
func annotationStrings(ws annotations.Annotations, query string) (warnings, infos []string) {
	if len(ws) == 0 {
		return nil, nil
	}
	warnings, infos = ws.AsStrings(query, 0, 0)
	return capStrings(warnings, maxWarnings, "warning"), capStrings(infos, maxInfos, "info")
}

func capStrings(ss []string, limit int, kind string) []string {
	slices.Sort(ss)
	if len(ss) <= limit {
		return ss
	}
	omitted := len(ss) - limit
	return append(ss[:limit], fmt.Sprintf("%d more %s annotations omitted", omitted, kind))
}
