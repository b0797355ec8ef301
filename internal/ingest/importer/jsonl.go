package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/value"
)

// jsonLine is a line of VictoriaMetrics' JSON-lines format.
type jsonLine struct {
	Metric     map[string]string `json:"metric"`
	Values     []jsonValue       `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

// jsonValue is a sample value: a number, null (a stale marker: it is what
// VictoriaMetrics and strata export one as), or a string naming a special
// value ("NaN", "Infinity", "-Infinity", and the spellings
// VictoriaMetrics reads).
type jsonValue float64

func (v *jsonValue) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*v = jsonValue(math.Float64frombits(value.StaleNaN))
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, err := specialValue(s)
		*v = jsonValue(f)
		return err
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("value %s: %w", b, err)
	}
	*v = jsonValue(f)
	return nil
}

func specialValue(s string) (float64, error) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	switch s {
	case "Inf", "inf", "Infinity", "infinity", "+Inf":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "NaN", "nan", "null", "Null":
		return math.NaN(), nil
	}
	return 0, fmt.Errorf("unsupported value %q", s)
}

// parseJSONLine reads a line of JSON lines into w.
func parseJSONLine(w *writer, line []byte) error {
	var l jsonLine
	if err := json.Unmarshal(line, &l); err != nil {
		return fmt.Errorf("cannot parse JSON line: %w", err)
	}
	switch {
	case len(l.Metric) == 0:
		return errors.New("missing `metric` object")
	case len(l.Values) == 0:
		return errors.New("missing `values` array")
	case len(l.Values) != len(l.Timestamps):
		return fmt.Errorf("`timestamps` array size must match `values` array size; got %d; want %d", len(l.Timestamps), len(l.Values))
	}
	w.lb.Reset()
	for k, v := range l.Metric {
		if v != "" {
			w.lb.Add(k, v)
		}
	}
	w.lb.Sort()
	lset := w.lb.Labels()
	if err := w.series(lset); err != nil {
		return err
	}
	w.vs = w.vs[:0]
	for _, v := range l.Values {
		w.vs = append(w.vs, float64(v))
	}
	return w.append(lset, l.Timestamps, w.vs)
}
