package rwpb

// Messages both protocol versions share, decoded from b[i:], where b ends
// where the message ends. v2 says the message is the 2.0 one, which has
// the start timestamp fields (Sample 3, Histogram 17) that 1.0 lacks; in a
// 1.0 message those are unknown fields and skipped.

// sample decodes a Sample.
func sample(b []byte, i int, v2 bool) (Sample, error) {
	var s Sample
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return s, tagErr(j, i)
		}
		var (
			v   uint64
			err error
		)
		switch tag {
		case 1<<3 | wireFixed64:
			s.Value, j, err = double(b, j, "value")
		case 2<<3 | wireVarint:
			v, j, err = uvarint(b, j, "timestamp")
			s.Timestamp = int64(v)
		case 3<<3 | wireVarint:
			if !v2 {
				j, err = skip(b, i, j, tag)
				break
			}
			v, j, err = uvarint(b, j, "start_timestamp")
			s.StartTimestamp = int64(v)
		default:
			switch tag >> 3 {
			case 1:
				return s, wrongWireType(tag, i, "value")
			case 2:
				return s, wrongWireType(tag, i, "timestamp")
			case 3:
				if v2 {
					return s, wrongWireType(tag, i, "start_timestamp")
				}
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return s, err
		}
		i = j
	}
	return s, nil
}

// histogramFields names the fields of Histogram by number, for errors.
var histogramFields = [...]string{
	1: "count_int", 2: "count_float", 3: "sum", 4: "schema", 5: "zero_threshold",
	6: "zero_count_int", 7: "zero_count_float", 8: "negative_spans", 9: "negative_deltas",
	10: "negative_counts", 11: "positive_spans", 12: "positive_deltas", 13: "positive_counts",
	14: "reset_hint", 15: "timestamp", 16: "custom_values", 17: "start_timestamp",
}

// Which field of a oneof was set last.
const (
	oneofUnset = iota
	oneofInt
	oneofFloat
)

// histogram decodes a Histogram and appends it to a.histograms.
func (a *arena) histogram(b []byte, i int, v2 bool) error {
	a.histograms = append(a.histograms, Histogram{})
	h := &a.histograms[len(a.histograms)-1]
	nsLo, psLo := len(a.negSpans), len(a.posSpans)
	ndLo, pdLo := len(a.negDeltas), len(a.posDeltas)
	ncLo, pcLo := len(a.negCounts), len(a.posCounts)
	cvLo := len(a.customVals)
	count, zeroCount := oneofUnset, oneofUnset
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var (
			v   uint64
			f   float64
			err error
		)
		switch tag {
		case 1<<3 | wireVarint:
			v, j, err = uvarint(b, j, "count_int")
			h.CountInt, h.CountFloat, count = v, 0, oneofInt
		case 2<<3 | wireFixed64:
			f, j, err = double(b, j, "count_float")
			h.CountInt, h.CountFloat, count = 0, f, oneofFloat
		case 3<<3 | wireFixed64:
			h.Sum, j, err = double(b, j, "sum")
		case 4<<3 | wireVarint:
			v, j, err = uvarint(b, j, "schema")
			h.Schema = zigzag32(v)
		case 5<<3 | wireFixed64:
			h.ZeroThreshold, j, err = double(b, j, "zero_threshold")
		case 6<<3 | wireVarint:
			v, j, err = uvarint(b, j, "zero_count_int")
			h.ZeroCountInt, h.ZeroCountFloat, zeroCount = v, 0, oneofInt
		case 7<<3 | wireFixed64:
			f, j, err = double(b, j, "zero_count_float")
			h.ZeroCountInt, h.ZeroCountFloat, zeroCount = 0, f, oneofFloat
		case 8<<3 | wireBytes:
			a.negSpans, j, err = appendSpan(a.negSpans, b, j, "negative_spans", len(a.negSpans)-nsLo)
		case 9<<3 | wireBytes:
			a.negDeltas, j, err = packedSint64s(a.negDeltas, b, j, "negative_deltas")
		case 9<<3 | wireVarint:
			v, j, err = uvarint(b, j, "negative_deltas")
			a.negDeltas = append(a.negDeltas, zigzag64(v))
		case 10<<3 | wireBytes:
			a.negCounts, j, err = packedDoubles(a.negCounts, b, j, "negative_counts")
		case 10<<3 | wireFixed64:
			f, j, err = double(b, j, "negative_counts")
			a.negCounts = append(a.negCounts, f)
		case 11<<3 | wireBytes:
			a.posSpans, j, err = appendSpan(a.posSpans, b, j, "positive_spans", len(a.posSpans)-psLo)
		case 12<<3 | wireBytes:
			a.posDeltas, j, err = packedSint64s(a.posDeltas, b, j, "positive_deltas")
		case 12<<3 | wireVarint:
			v, j, err = uvarint(b, j, "positive_deltas")
			a.posDeltas = append(a.posDeltas, zigzag64(v))
		case 13<<3 | wireBytes:
			a.posCounts, j, err = packedDoubles(a.posCounts, b, j, "positive_counts")
		case 13<<3 | wireFixed64:
			f, j, err = double(b, j, "positive_counts")
			a.posCounts = append(a.posCounts, f)
		case 14<<3 | wireVarint:
			v, j, err = uvarint(b, j, "reset_hint")
			h.ResetHint = ResetHint(int32(v))
		case 15<<3 | wireVarint:
			v, j, err = uvarint(b, j, "timestamp")
			h.Timestamp = int64(v)
		case 16<<3 | wireBytes:
			a.customVals, j, err = packedDoubles(a.customVals, b, j, "custom_values")
		case 16<<3 | wireFixed64:
			f, j, err = double(b, j, "custom_values")
			a.customVals = append(a.customVals, f)
		case 17<<3 | wireVarint:
			if !v2 {
				j, err = skip(b, i, j, tag)
				break
			}
			v, j, err = uvarint(b, j, "start_timestamp")
			h.StartTimestamp = int64(v)
		default:
			num := tag >> 3
			if num < 17 && num > 0 || num == 17 && v2 {
				return wrongWireType(tag, i, histogramFields[num])
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			// A value decoded before the error (v, f) is dropped with the
			// request.
			return err
		}
		i = j
	}
	h.IsFloat = count == oneofFloat || count == oneofUnset && zeroCount == oneofFloat
	// Provisional slices: see arena.
	h.NegativeSpans = a.negSpans[nsLo:]
	h.PositiveSpans = a.posSpans[psLo:]
	h.NegativeDeltas = a.negDeltas[ndLo:]
	h.PositiveDeltas = a.posDeltas[pdLo:]
	h.NegativeCounts = a.negCounts[ncLo:]
	h.PositiveCounts = a.posCounts[pcLo:]
	h.CustomValues = a.customVals[cvLo:]
	return nil
}

// appendSpan decodes the BucketSpan whose length prefix is at b[i:], the
// idx-th of its field, appends it to dst and returns the offset after it.
func appendSpan(dst []BucketSpan, b []byte, i int, field string, idx int) ([]BucketSpan, int, error) {
	start, end, err := length(b, i, field)
	if err != nil {
		return dst, i, err
	}
	var s BucketSpan
	p := b[:end]
	for k := start; k < end; {
		tag, j := varint(p, k)
		if j < 0 {
			return dst, i, within(tagErr(j, k), field, idx)
		}
		var v uint64
		switch tag {
		case 1<<3 | wireVarint:
			v, j, err = uvarint(p, j, "offset")
			s.Offset = zigzag32(v)
		case 2<<3 | wireVarint:
			v, j, err = uvarint(p, j, "length")
			s.Length = uint32(v)
		default:
			switch tag >> 3 {
			case 1:
				err = wrongWireType(tag, k, "offset")
			case 2:
				err = wrongWireType(tag, k, "length")
			default:
				j, err = skip(p, k, j, tag)
			}
		}
		if err != nil {
			return dst, i, within(err, field, idx)
		}
		k = j
	}
	return append(dst, s), end, nil
}
