package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
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

// jsonLineParser returns a parser of JSON lines, with its own scratch
// space.
func jsonLineParser() lineParser {
	var (
		lb labels.ScratchBuilder
		vs []float64
	)
	return func(line []byte, add addFunc) error {
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
		lb.Reset()
		for k, v := range l.Metric {
			if v != "" {
				lb.Add(k, v)
			}
		}
		lb.Sort()
		vs = vs[:0]
		for _, v := range l.Values {
			vs = append(vs, float64(v))
		}
		return add(lb.Labels(), l.Timestamps, vs)
	}
}

// ReadJSONLines reads VictoriaMetrics' JSON lines from r, as
// /api/v1/import does, and passes each line's series to add with its
// samples, which add may not keep. The first line that is longer than
// maxLineBytes, cannot be read or that add refuses ends it with an
// error that names the line.
func ReadJSONLines(r io.Reader, maxLineBytes int, add func(lset labels.Labels, ts []int64, vs []float64) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLineBytes)), maxLineBytes)
	parse := jsonLineParser()
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := parse(sc.Bytes(), add); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("line %d is longer than the limit of %d bytes", n+1, maxLineBytes)
	}
	return sc.Err()
}
