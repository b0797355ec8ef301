package rollup

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
)

// markerLabel is the label of the selectors that stand for inners in a
// rewritten query. Names starting with two underscores are reserved for
// internal use, so no user's selector matches on it; it is short so that
// the marker, {__r="N"}, fits in the text of a selector such as
// node_load1.
const markerLabel = "__r"

// inner is an expression this package evaluates: a function of
// windowFuncs over a matrix selector, or an instant vector selector
// alone, possibly aggregated.
type inner struct {
	agg  *parser.AggregateExpr  // nil: the call or selector alone
	call *parser.Call           // nil: the selector alone
	ms   *parser.MatrixSelector // nil: the selector alone
	vs   *parser.VectorSelector
	pos  posrange.PositionRange // of the whole inner in the query
}

// plan holds a query's inners and the query with each replaced by its
// marker selector.
type plan struct {
	inners    []*inner
	rewritten string
	// alone says the query is its one inner: its answer is the inner's
	// result, with no need of the engine.
	alone bool
	// startTimes leaves calls of startTimeFuncs to the engine.
	startTimes bool
}

// aggregations are the aggregation operators an inner may apply.
var aggregations = map[parser.ItemType]bool{
	parser.SUM: true, parser.AVG: true, parser.MIN: true, parser.MAX: true,
	parser.COUNT: true, parser.GROUP: true,
}

// transparent are the functions that may take an inner's result as an
// argument: each computes its output from its input's values and labels
// only, whatever expression produced them. Others (timestamp, absent,
// the range functions) are not.
var transparent = map[string]bool{
	"abs": true, "ceil": true, "floor": true, "round": true, "exp": true, "sqrt": true,
	"ln": true, "log2": true, "log10": true, "sgn": true, "clamp": true, "clamp_min": true,
	"clamp_max": true, "histogram_quantile": true, "scalar": true, "sort": true,
	"sort_desc": true, "sort_by_label": true, "sort_by_label_desc": true,
	"label_replace": true, "label_join": true, "deg": true, "rad": true,
	"acos": true, "acosh": true, "asin": true, "asinh": true, "atan": true, "atanh": true,
	"cos": true, "cosh": true, "sin": true, "sinh": true, "tan": true, "tanh": true,
}

// startTimeFuncs are the window functions whose results Prometheus'
// engine computes from the samples' start times too, when it is told to
// use them: at a restart that the values do not show (the counter rose
// past its old value before the first sample after it), and, for rate
// and increase, at the window's start.
var startTimeFuncs = map[string]bool{"rate": true, "increase": true, "irate": true, "resets": true}

// newPlan returns the plan for query qs, or nil if it has no inner or
// must run whole (see the package comment). A query that does not parse
// gets nil: Prometheus' engine reports its error. With startTimes, calls
// of startTimeFuncs are not inners.
func newPlan(p parser.Parser, qs string, startTimes bool) *plan {
	expr, err := p.ParseExpr(qs)
	if err != nil || runsWhole(expr) {
		return nil
	}
	pl := &plan{startTimes: startTimes}
	pl.collect(expr)
	if len(pl.inners) == 0 {
		return nil
	}
	var b strings.Builder
	last := 0
	for i, in := range pl.inners {
		b.WriteString(qs[last:in.pos.Start])
		sel := marker(i)
		b.WriteString(sel)
		b.WriteString(strings.Repeat(" ", int(in.pos.End-in.pos.Start)-len(sel)))
		last = int(in.pos.End)
	}
	b.WriteString(qs[last:])
	pl.rewritten = b.String()
	pl.alone = len(pl.inners) == 1 && strings.TrimSpace(pl.rewritten) == marker(0)
	return pl
}

// marker returns the selector that stands for inner i.
func marker(i int) string { return fmt.Sprintf(`{%s="%d"}`, markerLabel, i) }

// collect adds the outermost inners of expr that only transparent
// expressions surround, in the order of their positions.
func (pl *plan) collect(expr parser.Expr) {
	if in := innerOf(expr); in != nil && !(pl.startTimes && in.call != nil && startTimeFuncs[in.call.Func.Name]) {
		// Its marker must fit in its text.
		if int(in.pos.End-in.pos.Start) >= len(marker(len(pl.inners))) {
			pl.inners = append(pl.inners, in)
		}
		return
	}
	switch e := expr.(type) {
	case *parser.ParenExpr:
		pl.collect(e.Expr)
	case *parser.UnaryExpr:
		pl.collect(e.Expr)
	case *parser.BinaryExpr:
		pl.collect(e.LHS)
		pl.collect(e.RHS)
	case *parser.AggregateExpr:
		pl.collect(e.Expr)
	case *parser.Call:
		if transparent[e.Func.Name] {
			for _, arg := range e.Args {
				pl.collect(arg)
			}
		}
	}
}

// innerOf returns expr as an inner, or nil if it is not one.
func innerOf(expr parser.Expr) *inner {
	var agg *parser.AggregateExpr
	if a, ok := expr.(*parser.AggregateExpr); ok {
		if !aggregations[a.Op] || a.Param != nil {
			return nil
		}
		agg, expr = a, a.Expr
		for {
			p, ok := expr.(*parser.ParenExpr)
			if !ok {
				break
			}
			expr = p.Expr
		}
	}
	in := &inner{agg: agg}
	switch e := expr.(type) {
	case *parser.VectorSelector:
		in.vs, in.pos = e, e.PositionRange()
	case *parser.Call:
		if _, ok := windowFuncs[e.Func.Name]; !ok || len(e.Args) != 1 {
			return nil
		}
		ms, ok := e.Args[0].(*parser.MatrixSelector)
		if !ok || ms.RangeExpr != nil {
			// A range given as an expression is computed by the engine.
			return nil
		}
		vs, ok := ms.VectorSelector.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		in.call, in.ms, in.vs, in.pos = e, ms, vs, e.PositionRange()
	default:
		return nil
	}
	if in.vs.Anchored || in.vs.Smoothed || in.vs.OriginalOffsetExpr != nil {
		return nil
	}
	if agg != nil {
		in.pos = agg.PositionRange()
	}
	return in
}

// runsWhole reports whether expr must run whole in the engine: it has
// an @ modifier or a subquery anywhere, both of which evaluate parts of a
// query at times other than its steps, or a selector on markerLabel,
// which in the rewritten query would read an inner's result.
func runsWhole(expr parser.Expr) bool {
	found := false
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			found = found || n.Timestamp != nil || n.StartOrEnd != 0
			for _, m := range n.LabelMatchers {
				found = found || m.Name == markerLabel
			}
		case *parser.SubqueryExpr:
			found = true
		}
		return nil
	})
	return found
}
