package workload

import (
	"fmt"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Protocol is a remote-write protocol version.
type Protocol string

const (
	// V1 is remote-write 1.0: prometheus.WriteRequest.
	V1 Protocol = "1.0"
	// V2 is remote-write 2.0: io.prometheus.write.v2.Request, with a
	// symbol table and metadata per series.
	V2 Protocol = "2.0"
	// OTLP is OTLP/HTTP: a gzipped ExportMetricsServiceRequest in
	// protobuf (see buildOTLP).
	OTLP Protocol = "otlp"
	// OTLPGRPC is OTLP/gRPC: the same request, uncompressed.
	OTLPGRPC Protocol = "otlp-grpc"
)

// ParseProtocol accepts "1.0", "1", "2.0", "2", "otlp" and "otlp-grpc".
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "1.0", "1":
		return V1, nil
	case "2.0", "2":
		return V2, nil
	case "otlp":
		return OTLP, nil
	case "otlp-grpc":
		return OTLPGRPC, nil
	}
	return "", fmt.Errorf("unknown protocol %q: want 1.0 or 2.0 (remote-write), otlp or otlp-grpc", s)
}

// ContentType returns the Content-Type header of a request body.
func (p Protocol) ContentType() string {
	if p == V2 {
		return "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	}
	return "application/x-protobuf"
}

// ContentEncoding returns the Content-Encoding header of a request body.
func (p Protocol) ContentEncoding() string {
	if p == OTLP {
		return "gzip"
	}
	return "snappy"
}

// Version returns the X-Prometheus-Remote-Write-Version header value.
func (p Protocol) Version() string {
	if p == V2 {
		return "2.0.0"
	}
	return "0.1.0"
}

// Info describes an encoded request.
type Info struct {
	Round   int64
	Series  int
	Samples int
}

// Encoder builds request bodies. It keeps its scratch memory between
// calls, so it is not safe for concurrent use: give each goroutine its
// own.
type Encoder struct {
	sched    *Schedule
	protocol Protocol
	labeler  *labeler

	ids    []uint64
	labels []Label
	raw    []byte

	v1      prompb.WriteRequest
	v2      writev2.Request
	symbols writev2.SymbolsTable
	refs    []uint32
}

// NewEncoder returns an encoder of the requests of sched in protocol p.
func NewEncoder(sched *Schedule, p Protocol) *Encoder {
	o := sched.Options()
	return &Encoder{sched: sched, protocol: p, labeler: newLabeler(o.Seed, o.Labels), symbols: writev2.NewSymbolTable()}
}

// Append appends the snappy-compressed body of request q of sender c to
// dst and returns it, with what the request carries. The result depends
// only on the schedule's options, c and q.
func (e *Encoder) Append(dst []byte, c int, q int64) ([]byte, Info, error) {
	s := e.sched
	e.ids = s.AppendSeries(e.ids[:0], c, q)
	info := Info{Round: s.Round(c, q), Series: len(e.ids)}
	info.Samples = info.Series * s.opts.SamplesPerSeries
	var err error
	switch e.protocol {
	case V2:
		err = e.buildV2(info.Round)
	case OTLP, OTLPGRPC:
		if err = e.buildOTLP(info.Round, e.protocol == OTLP); err == nil {
			// Already compressed.
			return append(dst, e.raw...), info, nil
		}
	default:
		err = e.buildV1(info.Round)
	}
	if err != nil {
		return dst, info, fmt.Errorf("encode request %d of sender %d: %w", q, c, err)
	}
	start := len(dst)
	n := snappy.MaxEncodedLen(len(e.raw))
	if n < 0 {
		return dst, info, fmt.Errorf("encode request %d of sender %d: %d bytes are too many for snappy", q, c, len(e.raw))
	}
	dst = grow(dst, n)
	out := snappy.Encode(dst[start:start+n], e.raw)
	return dst[:start+len(out)], info, nil
}

// grow makes room for n more bytes after len(b).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b
}

func (e *Encoder) buildV1(round int64) error {
	s := e.sched
	o := &s.opts
	req := &e.v1
	req.Timeseries = resize(req.Timeseries, len(e.ids))
	for i, id := range e.ids {
		ts := &req.Timeseries[i]
		e.labels = e.labeler.append(e.labels[:0], id)
		ts.Labels = resize(ts.Labels, len(e.labels))
		for j, l := range e.labels {
			ts.Labels[j] = prompb.Label{Name: l.Name, Value: l.Value}
		}
		ts.Samples = resize(ts.Samples, o.SamplesPerSeries)
		for j := range ts.Samples {
			k := s.SampleIndex(round, j)
			ts.Samples[j] = prompb.Sample{Timestamp: s.Timestamp(round, j), Value: o.value(id, k)}
		}
	}
	size := req.Size()
	e.raw = resize(e.raw, size)
	n, err := req.MarshalToSizedBuffer(e.raw)
	if err != nil {
		return err
	}
	e.raw = e.raw[size-n:]
	return nil
}

func (e *Encoder) buildV2(round int64) error {
	s := e.sched
	o := &s.opts
	req := &e.v2
	e.symbols.Reset()
	req.Timeseries = resize(req.Timeseries, len(e.ids))
	for i, id := range e.ids {
		ts := &req.Timeseries[i]
		e.labels = e.labeler.append(e.labels[:0], id)
		refs := ts.LabelsRefs[:0]
		for _, l := range e.labels {
			refs = append(refs, e.symbols.Symbolize(l.Name), e.symbols.Symbolize(l.Value))
		}
		ts.LabelsRefs = refs
		ts.Samples = resize(ts.Samples, o.SamplesPerSeries)
		for j := range ts.Samples {
			k := s.SampleIndex(round, j)
			ts.Samples[j] = writev2.Sample{Timestamp: s.Timestamp(round, j), Value: o.value(id, k)}
		}
		typ, help := MetricTypeOf(id)
		ts.Metadata = writev2.Metadata{Type: v2Type(typ), HelpRef: e.symbols.Symbolize(help)}
	}
	req.Symbols = e.symbols.Symbols()
	size := req.Size()
	e.raw = resize(e.raw, size)
	n, err := req.MarshalToSizedBuffer(e.raw)
	if err != nil {
		return err
	}
	e.raw = e.raw[size-n:]
	return nil
}

func v2Type(t MetricType) writev2.Metadata_MetricType {
	switch t {
	case Counter:
		return writev2.Metadata_METRIC_TYPE_COUNTER
	case Gauge:
		return writev2.Metadata_METRIC_TYPE_GAUGE
	case Histogram:
		return writev2.Metadata_METRIC_TYPE_HISTOGRAM
	}
	return writev2.Metadata_METRIC_TYPE_UNSPECIFIED
}

// resize returns s with length n, reusing its array when it is big enough.
// Elements past the old length keep whatever they held, so callers
// overwrite every element they use.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}
