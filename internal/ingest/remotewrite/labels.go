package remotewrite

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/ingest/remotewrite/rwpb"
	"github.com/strata-db/strata/internal/storage"
)

// labelBuilder turns a request's label pairs into labels.Labels without
// allocating: the label strings point into the request body, and the
// built set is written over the same buffer for every series. The store
// copies a label set only when it creates a new series, so a series that
// exists costs no allocation. A built set is valid until the next build.
type labelBuilder struct {
	b    labels.ScratchBuilder
	lset labels.Labels
}

// v1 builds the label set of a 1.0 series. Senders should sort labels but
// old ones do not, so they are sorted here. Labels with an empty value are
// dropped: in Prometheus' data model they are the same as no label.
func (lb *labelBuilder) v1(pairs []rwpb.Label, lim *Limits) (labels.Labels, error) {
	lb.b.Reset()
	hasName, n := false, 0
	for _, l := range pairs {
		if err := lim.checkLabel(l.Name, l.Value); err != nil {
			return labels.EmptyLabels(), fmt.Errorf("series %s: %w", v1String(pairs), err)
		}
		if l.Value == "" {
			continue
		}
		hasName = hasName || l.Name == labels.MetricName
		lb.b.Add(l.Name, l.Value)
		n++
	}
	lset, err := lb.finish(hasName, n, lim, true)
	if err != nil {
		return lset, fmt.Errorf("series %s: %w", v1String(pairs), err)
	}
	return lset, nil
}

// v2 builds the label set of a 2.0 series from its refs into symbols. The
// specification requires labels sorted by name; unsorted or repeated names
// are refused rather than guessed at.
func (lb *labelBuilder) v2(refs []uint32, symbols []string, lim *Limits) (labels.Labels, error) {
	if len(refs)%2 != 0 {
		return labels.EmptyLabels(), fmt.Errorf("%w: series with label refs %v: odd number of refs", storage.ErrInvalidLabels, refs)
	}
	lb.b.Reset()
	hasName, n := false, 0
	prev := ""
	for i := 0; i < len(refs); i += 2 {
		nr, vr := refs[i], refs[i+1]
		if int(nr) >= len(symbols) || int(vr) >= len(symbols) {
			return labels.EmptyLabels(), fmt.Errorf("%w: series %v: label ref out of range of the %d symbols", errBadRef, refs, len(symbols))
		}
		name, value := symbols[nr], symbols[vr]
		if err := lim.checkLabel(name, value); err != nil {
			return labels.EmptyLabels(), fmt.Errorf("series %s: %w", v2String(refs, symbols), err)
		}
		if i > 0 && name <= prev {
			what := "not sorted by name"
			if name == prev {
				what = fmt.Sprintf("duplicate label name %q", name)
			}
			return labels.EmptyLabels(), fmt.Errorf("%w: series %s: labels %s", storage.ErrInvalidLabels, v2String(refs, symbols), what)
		}
		prev = name
		if value == "" {
			continue
		}
		hasName = hasName || name == labels.MetricName
		lb.b.Add(name, value)
		n++
	}
	lset, err := lb.finish(hasName, n, lim, false)
	if err != nil {
		return lset, fmt.Errorf("series %s: %w", v2String(refs, symbols), err)
	}
	return lset, nil
}

// finish checks what can only be checked of the whole set of n labels and
// builds it.
func (lb *labelBuilder) finish(hasName bool, n int, lim *Limits, sort bool) (labels.Labels, error) {
	if !hasName {
		return labels.EmptyLabels(), fmt.Errorf("%w: no metric name", storage.ErrInvalidLabels)
	}
	if err := lim.checkCount(n); err != nil {
		return labels.EmptyLabels(), err
	}
	if sort {
		lb.b.Sort()
	}
	lb.b.Overwrite(&lb.lset)
	return lb.lset, nil
}

// v1Exemplar builds an exemplar's label set: no metric name needed, empty
// values kept out, the length limit checked by the store.
func (lb *labelBuilder) v1Exemplar(pairs []rwpb.Label) (labels.Labels, error) {
	lb.b.Reset()
	for _, l := range pairs {
		if l.Name == "" {
			return labels.EmptyLabels(), fmt.Errorf("%w: empty exemplar label name", storage.ErrInvalidLabels)
		}
		if l.Value != "" {
			lb.b.Add(l.Name, l.Value)
		}
	}
	lb.b.Sort()
	lb.b.Overwrite(&lb.lset)
	return lb.lset, nil
}

// v2Exemplar builds an exemplar's label set from refs into symbols.
func (lb *labelBuilder) v2Exemplar(refs []uint32, symbols []string) (labels.Labels, error) {
	if len(refs)%2 != 0 {
		return labels.EmptyLabels(), fmt.Errorf("%w: odd number of exemplar label refs (%d)", storage.ErrInvalidLabels, len(refs))
	}
	lb.b.Reset()
	for i := 0; i < len(refs); i += 2 {
		if int(refs[i]) >= len(symbols) || int(refs[i+1]) >= len(symbols) {
			return labels.EmptyLabels(), fmt.Errorf("%w: exemplar label ref out of range of the %d symbols", errBadRef, len(symbols))
		}
		name, value := symbols[refs[i]], symbols[refs[i+1]]
		if name == "" {
			return labels.EmptyLabels(), fmt.Errorf("%w: empty exemplar label name", storage.ErrInvalidLabels)
		}
		if value != "" {
			lb.b.Add(name, value)
		}
	}
	lb.b.Sort()
	lb.b.Overwrite(&lb.lset)
	return lb.lset, nil
}

// errBadRef marks a reference into the symbols table that is out of range.
var errBadRef = errors.New("invalid symbol reference")

// v1String and v2String render labels as sent, for error messages about
// label sets that could not be built.
func v1String(pairs []rwpb.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range pairs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

func v2String(refs []uint32, symbols []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(refs); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		name, value := "?", "?"
		if int(refs[i]) < len(symbols) {
			name = symbols[refs[i]]
		}
		if int(refs[i+1]) < len(symbols) {
			value = symbols[refs[i+1]]
		}
		fmt.Fprintf(&b, "%s=%q", name, value)
	}
	b.WriteByte('}')
	return b.String()
}
