// Package rollup evaluates the part of PromQL queries that dashboards
// spend their time in, a function of a range vector (rate, increase,
// irate, delta, idelta, changes, resets, sum_over_time, avg_over_time,
// min_over_time, max_over_time, count_over_time) or an instant vector
// selector, and the sum, avg, min, max, count and group of it,
// one series at a time over all the steps of a query, and leaves the rest
// of the query to Prometheus' engine. The answers are Prometheus' own,
// bit for bit.
//
// Why: Prometheus' engine evaluates rate(x[5m]) step by step, copying
// each step's window of samples into a buffer and walking it for counter
// resets, so a range query costs the samples of every window: at a 30 s
// step over a 5 m range, each sample ten times. Here a series' samples
// are read once; a window's rate needs its first and last sample and the
// resets inside it, found once per series, so each step costs the same
// whatever the range (irate and idelta need the last two samples, resets
// the resets inside); the other functions walk each window, as the
// engine does, without copying it. An aggregation is summed as the
// engine sums it, series by series in the order the engine would see
// them, with the same Kahan summation, so even its rounding is the
// engine's. A selector's value at a step is the last sample of its
// lookback window unless that is a staleness marker, as the engine
// finds it by seeking to each step.
//
// How the two engines share a query: Engine parses the query and finds
// each outermost expression it evaluates (an "inner"), replacing its text
// in the query with a selector of the same length, {__r="N"} and
// spaces, so every position in the query (which annotations quote) stays
// where it was. Prometheus' engine runs the rewritten query over a
// Queryable that serves the selector from the inner's result: a series a
// sample at every step, the inner's value or a staleness marker where it
// has none, so the engine's lookback finds exactly the inner's value at
// each step. Everything around the inner (histogram_quantile, topk,
// binary operators) is the engine's own evaluation of the same values in
// the same order. A query that is one inner alone has nothing around
// it: its answer is made from the inner's result directly, as the
// engine would make it (the engine's walk of the step series took a
// tenth of a day-long range query's CPU).
//
// An inner is taken only where nothing around it can tell the difference:
// its ancestors are aggregations, binary and unary operators, parentheses
// and functions of one instant vector's values (histogram_quantile, abs,
// round, ...), and the query has no @ modifier, no subquery and no
// selector on the marker's label. At
// evaluation, a series with native histogram samples, two results with
// the same labels (an error from the engine), or more points than the
// engine's sample limit make Engine run the whole query, unchanged,
// through Prometheus' engine instead; so does a query asking for
// per-step statistics, which count the engine's own work.
package rollup
