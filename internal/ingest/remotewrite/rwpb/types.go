package rwpb

// The types below are shared by both protocol versions. Strings and slices
// in them alias the buffer passed to Unmarshal and the request's own
// backing arrays: they are valid until the next Unmarshal (or Reset) on the
// same request, or until the buffer is reused, whichever comes first.
// Callers copy what they keep. Slices are cut with their capacity equal to
// their length, so appending to one never overwrites a neighbour.

// Label is a label name and value (remote-write 1.0).
type Label struct {
	Name, Value string
}

// Sample is a float sample.
type Sample struct {
	Value     float64
	Timestamp int64 // milliseconds
	// StartTimestamp is the start (created) time of a cumulative series in
	// milliseconds (remote-write 2.0 only); 0 if absent.
	StartTimestamp int64
}

// Exemplar is an exemplar. A 1.0 exemplar has Labels, a 2.0 exemplar
// LabelRefs: pairs of indexes into the request's Symbols.
type Exemplar struct {
	Labels    []Label  // 1.0
	LabelRefs []uint32 // 2.0
	Value     float64
	Timestamp int64 // milliseconds
}

// BucketSpan is a run of consecutive buckets of a native histogram.
type BucketSpan struct {
	Offset int32 // gap to the previous span, or index of the first bucket
	Length uint32
}

// ResetHint says whether a histogram follows a counter reset; values are
// those of the protos' Histogram.ResetHint.
type ResetHint int32

// The reset hints.
const (
	ResetHintUnknown ResetHint = 0 // test for a counter reset explicitly
	ResetHintYes     ResetHint = 1 // first histogram after a counter reset
	ResetHintNo      ResetHint = 2 // no counter reset since the previous histogram
	ResetHintGauge   ResetHint = 3 // a gauge histogram; counter resets do not happen
)

// Histogram is a native histogram, integer or float.
//
// The protos hold the count and the zero count in two oneofs. A field of a
// oneof that was not the last one set on the wire reads as 0, as with the
// generated getters: CountInt is 0 if the count was sent as count_float.
type Histogram struct {
	// IsFloat says the histogram is a float histogram: the count oneof
	// holds count_float or, if no count was sent at all, the zero count
	// oneof holds zero_count_float. When a count is present this is
	// prompb's IsFloatHistogram; the fallback keeps a float histogram
	// whose sender left the count out from being read as an integer one.
	IsFloat    bool
	CountInt   uint64
	CountFloat float64

	Sum           float64
	Schema        int32
	ZeroThreshold float64

	ZeroCountInt   uint64
	ZeroCountFloat float64

	NegativeSpans  []BucketSpan
	NegativeDeltas []int64   // integer histograms: delta to the previous bucket
	NegativeCounts []float64 // float histograms: absolute counts
	PositiveSpans  []BucketSpan
	PositiveDeltas []int64
	PositiveCounts []float64

	ResetHint ResetHint
	Timestamp int64 // milliseconds

	// CustomValues are the bucket bounds of a custom-buckets histogram
	// (schema -53).
	CustomValues []float64

	// StartTimestamp is the start (created) time in milliseconds
	// (remote-write 2.0 only); 0 if absent.
	StartTimestamp int64
}

// MetricType is the type of a metric family; values are those of both
// protos' MetricType enums.
type MetricType int32

// The metric types.
const (
	MetricTypeUnknown        MetricType = 0 // 1.0 UNKNOWN, 2.0 METRIC_TYPE_UNSPECIFIED
	MetricTypeCounter        MetricType = 1
	MetricTypeGauge          MetricType = 2
	MetricTypeHistogram      MetricType = 3
	MetricTypeGaugeHistogram MetricType = 4
	MetricTypeSummary        MetricType = 5
	MetricTypeInfo           MetricType = 6
	MetricTypeStateSet       MetricType = 7
)
