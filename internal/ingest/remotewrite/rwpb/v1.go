package rwpb

// V1Request is a remote-write 1.0 request (prometheus.WriteRequest).
//
// Lifetime: the strings and slices Unmarshal fills in alias the buffer it
// was given and the request's own backing arrays. They are valid until the
// next Unmarshal or Reset on the same V1Request, or until the buffer is
// reused, whichever comes first; callers copy what they keep. A V1Request
// is not safe for concurrent use.
type V1Request struct {
	Series   []V1Series
	Metadata []V1Metadata

	a arena
}

// V1Series is a prometheus.TimeSeries.
type V1Series struct {
	Labels     []Label
	Samples    []Sample // StartTimestamp is always 0
	Exemplars  []Exemplar
	Histograms []Histogram // StartTimestamp is always 0
}

// V1Metadata is a prometheus.MetricMetadata.
type V1Metadata struct {
	Type             MetricType
	MetricFamilyName string
	Help             string
	Unit             string
}

const v1Request = "remote-write 1.0 request"

// Unmarshal decodes b, replacing what r held. It checks the wire format
// only; see the package documentation. On error r is empty and the error
// wraps ErrInvalid.
func (r *V1Request) Unmarshal(b []byte) error {
	r.Series = r.Series[:0]
	r.Metadata = r.Metadata[:0]
	r.a.truncate()
	if err := r.decode(b); err != nil {
		r.Series = r.Series[:0]
		r.Metadata = r.Metadata[:0]
		r.a.truncate()
		return finish(err, v1Request)
	}
	r.fixup()
	return nil
}

// Reset empties r and zeroes its backing arrays, so that r keeps no
// decoded buffer reachable; call it before putting r into a pool. Reset
// keeps the arrays' capacity.
func (r *V1Request) Reset() {
	clearAll(r.Series)
	clearAll(r.Metadata)
	r.Series = r.Series[:0]
	r.Metadata = r.Metadata[:0]
	r.a.clear()
}

func (r *V1Request) decode(b []byte) error {
	for i := 0; i < len(b); {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var err error
		switch tag {
		case 1<<3 | wireBytes:
			var start, end int
			if start, end, err = length(b, j, "timeseries"); err != nil {
				return err
			}
			r.Series = append(r.Series, V1Series{})
			if err := r.series(b[:end], start, &r.Series[len(r.Series)-1]); err != nil {
				return within(err, "timeseries", len(r.Series)-1)
			}
			j = end
		case 3<<3 | wireBytes:
			var start, end int
			if start, end, err = length(b, j, "metadata"); err != nil {
				return err
			}
			m, err := v1Metadata(b[:end], start)
			if err != nil {
				return within(err, "metadata", len(r.Metadata))
			}
			r.Metadata = append(r.Metadata, m)
			j = end
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "timeseries")
			case 3:
				return wrongWireType(tag, i, "metadata")
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
func (r *V1Request) series(b []byte, i int, s *V1Series) error {
	a := &r.a
	lLo, sLo, eLo, hLo := len(a.labels), len(a.samples), len(a.exemplars), len(a.histograms)
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return tagErr(j, i)
		}
		var (
			start, end int
			err        error
		)
		switch tag {
		case 1<<3 | wireBytes:
			// Encoders write the labels back to back: decode the run in a
			// loop of its own, appending to a local copy of the slice.
			labels := a.labels
			for {
				if start, end, err = length(b, j, "labels"); err != nil {
					return err
				}
				l, err := label(b[:end], start)
				if err != nil {
					return within(err, "labels", len(labels)-lLo)
				}
				labels = append(labels, l)
				if end >= len(b) || b[end] != 1<<3|wireBytes {
					break
				}
				j = end + 1
			}
			a.labels = labels
		case 2<<3 | wireBytes:
			if start, end, err = length(b, j, "samples"); err != nil {
				return err
			}
			smp, err := sample(b[:end], start, false)
			if err != nil {
				return within(err, "samples", len(a.samples)-sLo)
			}
			a.samples = append(a.samples, smp)
		case 3<<3 | wireBytes:
			if start, end, err = length(b, j, "exemplars"); err != nil {
				return err
			}
			if err := a.v1Exemplar(b[:end], start); err != nil {
				return within(err, "exemplars", len(a.exemplars)-1-eLo)
			}
		case 4<<3 | wireBytes:
			if start, end, err = length(b, j, "histograms"); err != nil {
				return err
			}
			if err := a.histogram(b[:end], start, false); err != nil {
				return within(err, "histograms", len(a.histograms)-1-hLo)
			}
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "labels")
			case 2:
				return wrongWireType(tag, i, "samples")
			case 3:
				return wrongWireType(tag, i, "exemplars")
			case 4:
				return wrongWireType(tag, i, "histograms")
			}
			if end, err = skip(b, i, j, tag); err != nil {
				return err
			}
		}
		i = end
	}
	// Provisional slices: see arena.
	s.Labels = a.labels[lLo:]
	s.Samples = a.samples[sLo:]
	s.Exemplars = a.exemplars[eLo:]
	s.Histograms = a.histograms[hLo:]
	return nil
}

// label decodes a Label from b[i:].
func label(b []byte, i int) (Label, error) {
	// Fast path for what every encoder writes for names and values
	// shorter than 128 bytes: name (tag 0x0a, one-byte length), value (tag
	// 0x12, one-byte length), nothing else. Labels are most of a 1.0
	// request.
	if len(b)-i >= 4 && b[i] == 1<<3|wireBytes && b[i+1] < 0x80 {
		ns := i + 2
		ne := ns + int(b[i+1])
		if ne+2 <= len(b) && b[ne] == 2<<3|wireBytes && b[ne+1] < 0x80 {
			vs := ne + 2
			if vs+int(b[ne+1]) == len(b) {
				return Label{Name: alias(b, ns, ne), Value: alias(b, vs, len(b))}, nil
			}
		}
	}
	var (
		l   Label
		err error
	)
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return l, tagErr(j, i)
		}
		switch tag {
		case 1<<3 | wireBytes:
			l.Name, j, err = str(b, j, "name")
		case 2<<3 | wireBytes:
			l.Value, j, err = str(b, j, "value")
		default:
			switch tag >> 3 {
			case 1:
				return l, wrongWireType(tag, i, "name")
			case 2:
				return l, wrongWireType(tag, i, "value")
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return l, err
		}
		i = j
	}
	return l, nil
}

// v1Exemplar decodes an Exemplar from b[i:] and appends it to a.exemplars.
func (a *arena) v1Exemplar(b []byte, i int) error {
	a.exemplars = append(a.exemplars, Exemplar{})
	e := &a.exemplars[len(a.exemplars)-1]
	lLo := len(a.exLabels)
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
			var start, end int
			if start, end, err = length(b, j, "labels"); err != nil {
				return err
			}
			l, err := label(b[:end], start)
			if err != nil {
				return within(err, "labels", len(a.exLabels)-lLo)
			}
			a.exLabels = append(a.exLabels, l)
			j = end
		case 2<<3 | wireFixed64:
			e.Value, j, err = double(b, j, "value")
		case 3<<3 | wireVarint:
			v, j, err = uvarint(b, j, "timestamp")
			e.Timestamp = int64(v)
		default:
			switch tag >> 3 {
			case 1:
				return wrongWireType(tag, i, "labels")
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
	e.Labels = a.exLabels[lLo:] // provisional: see arena
	return nil
}

// v1Metadata decodes a MetricMetadata from b[i:].
func v1Metadata(b []byte, i int) (V1Metadata, error) {
	var (
		m   V1Metadata
		err error
	)
	for i < len(b) {
		tag, j := varint(b, i)
		if j < 0 {
			return m, tagErr(j, i)
		}
		var v uint64
		switch tag {
		case 1<<3 | wireVarint:
			v, j, err = uvarint(b, j, "type")
			m.Type = MetricType(int32(v))
		case 2<<3 | wireBytes:
			m.MetricFamilyName, j, err = str(b, j, "metric_family_name")
		case 4<<3 | wireBytes:
			m.Help, j, err = str(b, j, "help")
		case 5<<3 | wireBytes:
			m.Unit, j, err = str(b, j, "unit")
		default:
			switch tag >> 3 {
			case 1:
				return m, wrongWireType(tag, i, "type")
			case 2:
				return m, wrongWireType(tag, i, "metric_family_name")
			case 4:
				return m, wrongWireType(tag, i, "help")
			case 5:
				return m, wrongWireType(tag, i, "unit")
			}
			j, err = skip(b, i, j, tag)
		}
		if err != nil {
			return m, err
		}
		i = j
	}
	return m, nil
}

// fixup cuts the final slices of r's messages; see arena.
func (r *V1Request) fixup() {
	a := &r.a
	var l, s, e, h int
	for k := range r.Series {
		x := &r.Series[k]
		x.Labels = cut(a.labels, &l, len(x.Labels))
		x.Samples = cut(a.samples, &s, len(x.Samples))
		x.Exemplars = cut(a.exemplars, &e, len(x.Exemplars))
		x.Histograms = cut(a.histograms, &h, len(x.Histograms))
	}
	a.fixExemplars()
	a.fixHistograms()
}
