package rwpb

// V2Request is a remote-write 2.0 request (io.prometheus.write.v2.Request).
//
// Lifetime: the strings and slices Unmarshal fills in alias the buffer it
// was given and the request's own backing arrays. They are valid until the
// next Unmarshal or Reset on the same V2Request, or until the buffer is
// reused, whichever comes first; callers copy what they keep. A V2Request
// is not safe for concurrent use.
type V2Request struct {
	// Symbols is the string table that all refs index into.
	Symbols []string
	Series  []V2Series

	a arena
}

// V2Series is an io.prometheus.write.v2.TimeSeries. The refs in it are
// indexes into the request's Symbols, unchecked.
type V2Series struct {
	// LabelRefs are name, value, name, value, ... refs.
	LabelRefs  []uint32
	Samples    []Sample
	Histograms []Histogram
	Exemplars  []Exemplar // LabelRefs set, Labels nil
	Metadata   V2Metadata
}

// V2Metadata is an io.prometheus.write.v2.Metadata.
type V2Metadata struct {
	Type    MetricType
	HelpRef uint32
	UnitRef uint32
}

const v2Request = "remote-write 2.0 request"

// Unmarshal decodes b, replacing what r held. It checks the wire format
// only; see the package documentation. On error r is empty and the error
// wraps ErrInvalid.
func (r *V2Request) Unmarshal(b []byte) error {
	r.Symbols = r.Symbols[:0]
	r.Series = r.Series[:0]
	r.a.truncate()
	if err := r.decode(b); err != nil {
		r.Symbols = r.Symbols[:0]
		r.Series = r.Series[:0]
		r.a.truncate()
		return finish(err, v2Request)
	}
	r.fixup()
	return nil
}

// Reset empties r and zeroes its backing arrays, so that r keeps no
// decoded buffer reachable; call it before putting r into a pool. Reset
// keeps the arrays' capacity.
func (r *V2Request) Reset() {
	clearAll(r.Symbols)
	clearAll(r.Series)
	r.Symbols = r.Symbols[:0]
	r.Series = r.Series[:0]
	r.a.clear()
}

func (r *V2Request) decode(b []byte) error {
	for i := 0; i < len(b); {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var err error
		switch tag {
		case 4<<3 | wireBytes:
			// Encoders write the symbols back to back: decode the run in
			// a loop of its own, with the common one-byte length inline.
			syms := r.Symbols
			for {
				var s string
				if j < len(b) && b[j] < 0x80 && j+1+int(b[j]) <= len(b) {
					s, j = alias(b, j+1, j+1+int(b[j])), j+1+int(b[j])
				} else if s, j, err = str(b, j, ""); err != nil {
					return within(err, "symbols", len(syms))
				}
				syms = append(syms, s)
				if j >= len(b) || b[j] != 4<<3|wireBytes {
					break
				}
				j++
			}
			r.Symbols = syms
		case 5<<3 | wireBytes:
			var start, end int
			if start, end, err = length(b, j, "timeseries"); err != nil {
				return err
			}
			r.Series = append(r.Series, V2Series{})
			if err := r.series(b[:end], start, &r.Series[len(r.Series)-1]); err != nil {
				return within(err, "timeseries", len(r.Series)-1)
			}
			j = end
		default:
			switch tag >> 3 {
			case 4:
				return wrongWireType(tag, i, "symbols")
			case 5:
				return wrongWireType(tag, i, "timeseries")
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// series decodes a TimeSeries from b[i:] into s.
func (r *V2Request) series(b []byte, i int, s *V2Series) error {
	a := &r.a
	rLo, sLo, hLo, eLo := len(a.refs), len(a.samples), len(a.histograms), len(a.exemplars)
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var (
			start, end int
			v          uint64
			err        error
		)
		switch tag {
		case 1<<3 | wireBytes:
			a.refs, end, err = packedUint32s(a.refs, b, j, "labels_refs")
		case 1<<3 | wireVarint:
			v, end, err = uvarint(b, j, "labels_refs")
			a.refs = append(a.refs, uint32(v))
		case 2<<3 | wireBytes:
			if start, end, err = length(b, j, "samples"); err != nil {
				return err
			}
			smp, err := sample(b[:end], start, true)
			if err != nil {
				return within(err, "samples", len(a.samples)-sLo)
			}
			a.samples = append(a.samples, smp)
		case 3<<3 | wireBytes:
			if start, end, err = length(b, j, "histograms"); err != nil {
				return err
			}
			if err := a.histogram(b[:end], start, true); err != nil {
				return within(err, "histograms", len(a.histograms)-1-hLo)
			}
		case 4<<3 | wireBytes:
			if start, end, err = length(b, j, "exemplars"); err != nil {
				return err
			}
			if err := a.v2Exemplar(b[:end], start); err != nil {
				return within(err, "exemplars", len(a.exemplars)-1-eLo)
			}
		case 5<<3 | wireBytes:
			if start, end, err = length(b, j, "metadata"); err != nil {
				return err
			}
			// A repeated singular message field merges into what came
			// before, as protobuf requires.
			if err := v2Metadata(b[:end], start, &s.Metadata); err != nil {
				return within(err, "metadata", -1)
			}
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "labels_refs")
			case 2:
				return wrongWireType(tag, i, "samples")
			case 3:
				return wrongWireType(tag, i, "histograms")
			case 4:
				return wrongWireType(tag, i, "exemplars")
			case 5:
				return wrongWireType(tag, i, "metadata")
			}
			end, err = skip(b, i, j, tag)
		}
		if err != nil {
			return err
		}
		i = end
	}
	// Provisional slices: see arena.
	s.LabelRefs = a.refs[rLo:]
	s.Samples = a.samples[sLo:]
	s.Histograms = a.histograms[hLo:]
	s.Exemplars = a.exemplars[eLo:]
	return nil
}

// v2Exemplar decodes an Exemplar from b[i:] and appends it to a.exemplars.
func (a *arena) v2Exemplar(b []byte, i int) error {
	a.exemplars = append(a.exemplars, Exemplar{})
	e := &a.exemplars[len(a.exemplars)-1]
	rLo := len(a.exRefs)
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var (
			v   uint64
			err error
		)
		switch tag {
		case 1<<3 | wireBytes:
			a.exRefs, j, err = packedUint32s(a.exRefs, b, j, "labels_refs")
		case 1<<3 | wireVarint:
			v, j, err = uvarint(b, j, "labels_refs")
			a.exRefs = append(a.exRefs, uint32(v))
		case 2<<3 | wireFixed64:
			e.Value, j, err = double(b, j, "value")
		case 3<<3 | wireVarint:
			v, j, err = uvarint(b, j, "timestamp")
			e.Timestamp = int64(v)
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "labels_refs")
			case 2:
				return wrongWireType(tag, i, "value")
			case 3:
				return wrongWireType(tag, i, "timestamp")
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return err
		}
		i = j
	}
	e.LabelRefs = a.exRefs[rLo:] // provisional: see arena
	return nil
}

// v2Metadata decodes a Metadata from b[i:] into m, over what m holds.
func v2Metadata(b []byte, i int, m *V2Metadata) error {
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var (
			v   uint64
			err error
		)
		switch tag {
		case 1<<3 | wireVarint:
			v, j, err = uvarint(b, j, "type")
			m.Type = MetricType(int32(v))
		case 3<<3 | wireVarint:
			v, j, err = uvarint(b, j, "help_ref")
			m.HelpRef = uint32(v)
		case 4<<3 | wireVarint:
			v, j, err = uvarint(b, j, "unit_ref")
			m.UnitRef = uint32(v)
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "type")
			case 3:
				return wrongWireType(tag, i, "help_ref")
			case 4:
				return wrongWireType(tag, i, "unit_ref")
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// fixup cuts the final slices of r's messages; see arena.
func (r *V2Request) fixup() {
	a := &r.a
	var l, s, h, e int
	for k := range r.Series {
		x := &r.Series[k]
		x.LabelRefs = cut(a.refs, &l, len(x.LabelRefs))
		x.Samples = cut(a.samples, &s, len(x.Samples))
		x.Histograms = cut(a.histograms, &h, len(x.Histograms))
		x.Exemplars = cut(a.exemplars, &e, len(x.Exemplars))
	}
	a.fixExemplars()
	a.fixHistograms()
}
