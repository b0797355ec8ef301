package index

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"
)

// PostingsReader is what PostingsForMatchers needs of an index, in memory
// (MemPostings) or on disk (Reader).
type PostingsReader interface {
	// LabelValues returns the sorted values of label name.
	LabelValues(name string) ([]string, error)
	// Postings returns the refs of the series with label name set to
	// any of values.
	Postings(name string, values ...string) (Postings, error)
	// AllPostings returns the refs of all series.
	AllPostings() (Postings, error)
}

// checkEvery is how many label values a regular expression is matched
// against between checks of the context: a check costs about as much as
// a short match.
const checkEvery = 128

// PostingsForMatchers returns the refs of the series that match all of
// ms, with Prometheus' semantics: a matcher that matches the empty string
// also matches the series that do not have its label. Selectors without
// a matcher that needs a value select from all series.
//
// Over an index that changes meanwhile (MemPostings), every series there
// throughout the call is answered right, but one added or deleted during
// the call may be returned although it does not match: the lists of the
// matchers are read one after another, not as one snapshot, so that no
// lock is held across them. The head checks the labels of what it
// returns.
func PostingsForMatchers(ctx context.Context, r PostingsReader, ms ...*labels.Matcher) (Postings, error) {
	var its, drop []Postings
	for _, m := range ms {
		if m.Matches("") {
			// Series without the label match too: take away those whose
			// value does not match instead.
			p, err := postingsWhere(ctx, r, m.Name, func(v string) bool { return !m.Matches(v) })
			if err != nil {
				return nil, err
			}
			drop = append(drop, p)
			continue
		}
		var (
			p   Postings
			err error
		)
		switch {
		case m.Type == labels.MatchEqual:
			p, err = r.Postings(m.Name, m.Value)
		case m.Type == labels.MatchRegexp && len(m.SetMatches()) > 0:
			p, err = r.Postings(m.Name, m.SetMatches()...)
		default:
			p, err = postingsWhere(ctx, r, m.Name, m.Matches)
		}
		if err != nil {
			return nil, err
		}
		its = append(its, p)
	}
	if len(its) == 0 {
		all, err := r.AllPostings()
		if err != nil {
			return nil, err
		}
		its = append(its, all)
	}
	p := Intersect(its...)
	if len(drop) > 0 {
		p = Without(p, Merge(drop...))
	}
	return p, nil
}

// postingsWhere returns the refs of the series whose value of label name
// is one keep accepts.
func postingsWhere(ctx context.Context, r PostingsReader, name string, keep func(string) bool) (Postings, error) {
	vals, err := r.LabelValues(name)
	if err != nil {
		return nil, err
	}
	var matched []string
	for i, v := range vals {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if keep(v) {
			matched = append(matched, v)
		}
	}
	if len(matched) == 0 {
		return EmptyPostings(), nil
	}
	return r.Postings(name, matched...)
}
