package api

import (
	"net/http"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// parseQuery answers /api/v1/parse_query: the query's syntax tree, as
// the tree view of Prometheus' UI reads it. Every node is an object with
// a "type" and the fields of its kind; the shapes are Prometheus' (its
// translateAST), so that the same UI can draw strata's answers.
func (a *API) parseQuery(r *http.Request) result {
	expr, err := a.parser.ParseExpr(r.FormValue("query"))
	if err != nil {
		return errResult(invalidParam("query", err))
	}
	return result{data: jsonData{astNode(expr)}}
}

// object is a node of the tree; encoding/json writes its keys sorted, as
// Prometheus' encoder does.
type object = map[string]any

func astNode(e parser.Expr) any {
	switch n := e.(type) {
	case nil:
		return nil
	case *parser.AggregateExpr:
		return object{
			"type":     "aggregation",
			"op":       n.Op.String(),
			"expr":     astNode(n.Expr),
			"param":    astNode(n.Param),
			"grouping": orEmpty(n.Grouping),
			"without":  n.Without,
		}
	case *parser.BinaryExpr:
		return object{
			"type":     "binaryExpr",
			"op":       n.Op.String(),
			"lhs":      astNode(n.LHS),
			"rhs":      astNode(n.RHS),
			"matching": vectorMatching(n.VectorMatching),
			"bool":     n.ReturnBool,
		}
	case *parser.Call:
		args := make([]any, 0, len(n.Args))
		for _, arg := range n.Args {
			args = append(args, astNode(arg))
		}
		return object{
			"type": "call",
			"func": object{
				"name":       n.Func.Name,
				"argTypes":   n.Func.ArgTypes,
				"variadic":   n.Func.Variadic,
				"returnType": n.Func.ReturnType,
			},
			"args": args,
		}
	case *parser.MatrixSelector:
		vs := n.VectorSelector.(*parser.VectorSelector)
		o := selector(vs, "matrixSelector")
		o["range"] = n.Range.Milliseconds()
		o["rangeExpr"] = durationNode(n.RangeExpr)
		return o
	case *parser.VectorSelector:
		return selector(n, "vectorSelector")
	case *parser.SubqueryExpr:
		return object{
			"type":       "subquery",
			"expr":       astNode(n.Expr),
			"range":      n.Range.Milliseconds(),
			"rangeExpr":  durationNode(n.RangeExpr),
			"offset":     n.OriginalOffset.Milliseconds(),
			"offsetExpr": durationNode(n.OriginalOffsetExpr),
			"step":       n.Step.Milliseconds(),
			"stepExpr":   durationNode(n.StepExpr),
			"timestamp":  n.Timestamp,
			"startOrEnd": startOrEnd(n.StartOrEnd),
		}
	case *parser.DurationExpr:
		return durationNode(n)
	case *parser.NumberLiteral:
		return object{"type": "numberLiteral", "val": formatNumber(n.Val)}
	case *parser.StringLiteral:
		return object{"type": "stringLiteral", "val": n.Val}
	case *parser.ParenExpr:
		return object{"type": "parenExpr", "expr": astNode(n.Expr)}
	case *parser.UnaryExpr:
		return object{"type": "unaryExpr", "op": n.Op.String(), "expr": astNode(n.Expr)}
	case *parser.StepInvariantExpr:
		return astNode(n.Expr)
	}
	return nil
}

// selector is a vector selector's fields, under kind.
func selector(vs *parser.VectorSelector, kind string) object {
	matchers := make([]object, 0, len(vs.LabelMatchers))
	for _, m := range vs.LabelMatchers {
		matchers = append(matchers, matcher(m))
	}
	return object{
		"type":       kind,
		"name":       vs.Name,
		"offset":     vs.OriginalOffset.Milliseconds(),
		"offsetExpr": durationNode(vs.OriginalOffsetExpr),
		"matchers":   matchers,
		"timestamp":  vs.Timestamp,
		"startOrEnd": startOrEnd(vs.StartOrEnd),
		"anchored":   vs.Anchored,
		"smoothed":   vs.Smoothed,
	}
}

func matcher(m *labels.Matcher) object {
	return object{"name": m.Name, "value": m.Value, "type": m.Type.String()}
}

func vectorMatching(m *parser.VectorMatching) any {
	if m == nil {
		return nil
	}
	return object{
		"card":    m.Card.String(),
		"labels":  orEmpty(m.MatchingLabels),
		"on":      m.On,
		"include": orEmpty(m.Include),
		"fillValues": map[string]*float64{
			"lhs": m.FillValues.LHS,
			"rhs": m.FillValues.RHS,
		},
	}
}

// durationNode is a duration given as an expression (range, offset or
// step), null if it was given as a plain duration.
func durationNode(e parser.Expr) any {
	switch n := e.(type) {
	case nil:
		return nil
	case *parser.DurationExpr:
		if n == nil {
			return nil
		}
		return object{
			"type":    "durationExpr",
			"op":      n.Op.String(),
			"lhs":     durationNode(n.LHS),
			"rhs":     durationNode(n.RHS),
			"wrapped": n.Wrapped,
		}
	case *parser.NumberLiteral:
		if n == nil {
			return nil
		}
		return object{"type": "numberLiteral", "val": formatNumber(n.Val), "duration": n.Duration}
	}
	return astNode(e)
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func startOrEnd(t parser.ItemType) any {
	if t == 0 {
		return nil
	}
	return t.String()
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
