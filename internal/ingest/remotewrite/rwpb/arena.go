package rwpb

// arena holds the flat backing arrays that a request's slices are cut
// from. Unmarshal truncates them to length 0 and appends, so once a few
// requests have grown them a request allocates nothing.
//
// While a request is decoded, each array is appended to by one message at
// a time (the labels of series 3 are all appended before series 4 starts,
// wherever on the wire they sit among its other fields), so a message's
// elements are contiguous and messages own consecutive ranges, in the
// order they were decoded. An append may move an array, so the slice a
// message gets while decoding (arr[lo:]) is provisional: only its length
// is used. After the whole request is decoded, fixup-style passes walk the
// messages in decoding order and cut the final slices from the final
// arrays, at offsets that are the running sums of those lengths.
type arena struct {
	labels    []Label  // 1.0 series labels
	exLabels  []Label  // 1.0 exemplar labels
	refs      []uint32 // 2.0 series label refs
	exRefs    []uint32 // 2.0 exemplar label refs
	samples   []Sample // all versions
	exemplars []Exemplar

	histograms []Histogram
	negSpans   []BucketSpan
	posSpans   []BucketSpan
	negDeltas  []int64
	posDeltas  []int64
	negCounts  []float64
	posCounts  []float64
	customVals []float64
}

// truncate empties the arrays, keeping their capacity.
func (a *arena) truncate() {
	a.labels = a.labels[:0]
	a.exLabels = a.exLabels[:0]
	a.refs = a.refs[:0]
	a.exRefs = a.exRefs[:0]
	a.samples = a.samples[:0]
	a.exemplars = a.exemplars[:0]
	a.histograms = a.histograms[:0]
	a.negSpans = a.negSpans[:0]
	a.posSpans = a.posSpans[:0]
	a.negDeltas = a.negDeltas[:0]
	a.posDeltas = a.posDeltas[:0]
	a.negCounts = a.negCounts[:0]
	a.posCounts = a.posCounts[:0]
	a.customVals = a.customVals[:0]
}

// clear zeroes the arrays up to their capacity, so that they keep no
// decoded buffer reachable, and empties them.
func (a *arena) clear() {
	clearAll(a.labels)
	clearAll(a.exLabels)
	clearAll(a.exemplars)
	clearAll(a.histograms)
	// The remaining arrays hold no pointers.
	a.truncate()
}

// clearAll zeroes s up to its capacity.
func clearAll[T any](s []T) { clear(s[:cap(s)]) }

// cut returns the n elements of s from *off on, with capacity n, and
// advances *off. It returns nil if n is 0.
func cut[T any](s []T, off *int, n int) []T {
	if n == 0 {
		return nil
	}
	lo := *off
	*off = lo + n
	return s[lo : lo+n : lo+n]
}

// fixExemplars cuts the final label (1.0) or label ref (2.0) slices of all
// exemplars.
func (a *arena) fixExemplars() {
	var l, r int
	for k := range a.exemplars {
		e := &a.exemplars[k]
		e.Labels = cut(a.exLabels, &l, len(e.Labels))
		e.LabelRefs = cut(a.exRefs, &r, len(e.LabelRefs))
	}
}

// fixHistograms cuts the final slices of all histograms.
func (a *arena) fixHistograms() {
	var ns, ps, nd, pd, nc, pc, cv int
	for k := range a.histograms {
		h := &a.histograms[k]
		h.NegativeSpans = cut(a.negSpans, &ns, len(h.NegativeSpans))
		h.PositiveSpans = cut(a.posSpans, &ps, len(h.PositiveSpans))
		h.NegativeDeltas = cut(a.negDeltas, &nd, len(h.NegativeDeltas))
		h.PositiveDeltas = cut(a.posDeltas, &pd, len(h.PositiveDeltas))
		h.NegativeCounts = cut(a.negCounts, &nc, len(h.NegativeCounts))
		h.PositiveCounts = cut(a.posCounts, &pc, len(h.PositiveCounts))
		h.CustomValues = cut(a.customVals, &cv, len(h.CustomValues))
	}
}
