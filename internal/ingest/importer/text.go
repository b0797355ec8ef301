package importer

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/timestamp"
)

// Text serves /api/v1/import/prometheus: Prometheus' text exposition
// format, read by Prometheus' own parser. A sample without a timestamp
// gets the request's `timestamp` parameter (milliseconds, as
// VictoriaMetrics takes it) or the time the request arrived. # HELP and
// # TYPE lines are read and otherwise ignored.
func (h *Handler) Text() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		def := timestamp.FromTime(time.Now())
		if s := r.URL.Query().Get("timestamp"); s != "" {
			var err error
			if def, err = parseMillis(s); err != nil {
				http.Error(rw, fmt.Sprintf("invalid parameter \"timestamp\": %v", err), http.StatusBadRequest)
				return
			}
		}
		h.serve(textLineParser(def)).ServeHTTP(rw, r)
	})
}

func parseMillis(s string) (int64, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time in milliseconds", s)
	}
	return ms, nil
}

// textLineParser reads a line of the exposition format; def is the time
// of samples without one. Each line is parsed alone, so that a problem
// is named by its line.
func textLineParser(def int64) lineParser {
	st := labels.NewSymbolTable()
	var (
		lset labels.Labels
		t    [1]int64
		v    [1]float64
	)
	buf := make([]byte, 0, 256)
	return func(line []byte, add addFunc) error {
		buf = append(append(buf[:0], line...), '\n')
		p := textparse.NewPromParser(buf, st, false)
		for {
			e, err := p.Next()
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			if e != textparse.EntrySeries {
				continue
			}
			_, ts, val := p.Series()
			t[0], v[0] = def, val
			if ts != nil {
				t[0] = *ts
			}
			p.Labels(&lset)
			if err := add(lset, t[:], v[:]); err != nil {
				return err
			}
		}
	}
}
