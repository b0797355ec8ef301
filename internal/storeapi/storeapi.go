// Package storeapi serves Thanos' StoreAPI (the thanos.Store and
// thanos.info.Info gRPC services) from strata's storage, so that a Thanos
// Querier reads a strata node directly, with no sidecar beside it.
//
// The protocol is Thanos' own generated code (storepb, infopb); the
// series come from a storage.ChunkQueryable whose chunks are in
// Prometheus' encodings, the ones a Querier decodes. The node's external
// labels are advertised in Info and added to every series and label
// answer; they are not stored.
//
// A Series answer is sorted by the labels the Querier sees: the series'
// own with the external labels added and the request's
// without_replica_labels removed. Both can reorder series (a label
// added after a shorter series' last one sorts it after a longer one),
// so the series are selected first, their labels sorted, and only then
// their chunks read and sent, a series at a time: what is held for the
// whole answer is the label sets, not the chunks.
package storeapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/thanos-io/thanos/pkg/info/infopb"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	schunkenc "github.com/strata-db/strata/internal/chunkenc"
)

// Chunks gives q the chunk querier the StoreAPI and streamed
// remote-read send from: q's series encoded into Prometheus' chunks
// (XOR, histogram, float histogram) as they are read, for strata's own
// encodings are not Prometheus'. Start times are left out: Prometheus'
// encoder would put a series that has them into the chunk kinds that
// carry them (XOR2 and the histograms' ST kinds), which neither Thanos'
// StoreAPI nor remote-read clients read.
func Chunks(q storage.Queryable) storage.SampleAndChunkQueryable { return chunkQueryable{Queryable: q} }

// CachedChunks is Chunks for a store whose chunks never change, the
// blocks of a bucket: the Server sends each stored chunk's samples
// encoded whole, once, and kept in c (see Cache).
func CachedChunks(q storage.Queryable, c *Cache) storage.SampleAndChunkQueryable {
	return chunkQueryable{Queryable: q, cache: c}
}

type chunkQueryable struct {
	storage.Queryable
	cache *Cache
}

func (c chunkQueryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := c.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return chunkQuerier{Querier: q, cache: c.cache}, nil
}

type chunkQuerier struct {
	storage.Querier
	cache *Cache
}

func (q chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return &chunkSet{SeriesSet: q.Querier.Select(ctx, sortSeries, hints, ms...), cache: q.cache}
}

// chunkSet encodes the series of a SeriesSet into Prometheus' chunks.
// A series is encoded whole when its Iterator is asked for, with one
// sample iterator reused for every series of the set: the set's readers
// (the StoreAPI's Series, remote-read) ask for one series' chunks at a
// time. With a cache, the StoreAPI asks for a series' chunks from it
// (encodedSeries.appendCached).
type chunkSet struct {
	storage.SeriesSet
	samples chunkenc.Iterator
	cache   *Cache
	one     schunkenc.Series // of the stored chunk encodeStored encodes
	entries []*cacheEntry    // of the series appendCached appends
}

func (c *chunkSet) At() storage.ChunkSeries { return encodedSeries{Series: c.SeriesSet.At(), set: c} }

type encodedSeries struct {
	storage.Series
	set *chunkSet
}

func (s encodedSeries) Iterator(chunks.Iterator) chunks.Iterator {
	chks, err := s.set.encode(s.Series, 0)
	if err != nil {
		return &errChunks{err: err}
	}
	return storage.NewListChunkSeriesIterator(chks...)
}

// samplesPerChunk is where a chunk is cut, as Prometheus' own encoder
// cuts them.
const samplesPerChunk = 120

// encode returns a series' samples as chunks of Prometheus' classic
// kinds, a new chunk at every change of value type and after
// samplesPerChunk samples, as Prometheus' encoder does, and with span
// not 0 at every multiple of span (see pieceSpan); a histogram chunk
// that cannot take the next histogram is recoded or cut by its appender.
func (c *chunkSet) encode(s storage.Series, span int64) ([]chunks.Meta, error) {
	c.samples = s.Iterator(c.samples)
	var (
		out        []chunks.Meta
		chk        chunkenc.Chunk
		app        chunkenc.Appender
		n          int
		mint, maxt int64
		last       = chunkenc.ValNone
		window     int64
		err        error
	)
	for typ := c.samples.Next(); typ != chunkenc.ValNone; typ = c.samples.Next() {
		w := window
		if span > 0 {
			w = floorDiv(c.samples.AtT(), span)
		}
		if typ != last || n >= samplesPerChunk || w != window {
			window = w
			if n > 0 {
				out = append(out, chunks.Meta{Chunk: chk, MinTime: mint, MaxTime: maxt})
			}
			if chk, err = chunkenc.NewEmptyChunk(typ.ChunkEncoding(false, false)); err != nil {
				return nil, err
			}
			if app, err = chk.Appender(); err != nil {
				return nil, err
			}
			n, last = 0, typ
		}
		var (
			t       int64
			next    chunkenc.Chunk
			recoded bool
		)
		switch typ {
		case chunkenc.ValFloat:
			var v float64
			t, v = c.samples.At()
			app.Append(0, t, v)
		case chunkenc.ValHistogram:
			var h *histogram.Histogram
			t, h = c.samples.AtHistogram(nil)
			next, recoded, app, err = app.AppendHistogram(nil, 0, t, h, false)
		case chunkenc.ValFloatHistogram:
			var fh *histogram.FloatHistogram
			t, fh = c.samples.AtFloatHistogram(nil)
			next, recoded, app, err = app.AppendFloatHistogram(nil, 0, t, fh, false)
		default:
			return nil, fmt.Errorf("unknown sample type %s", typ)
		}
		if err != nil {
			return nil, err
		}
		if next != nil {
			// The appender cut a chunk (the old one is complete) or
			// recoded it (the new one holds its samples too).
			if !recoded && n > 0 {
				out = append(out, chunks.Meta{Chunk: chk, MinTime: mint, MaxTime: maxt})
				n = 0
			}
			chk = next
		}
		if n == 0 {
			mint = t
		}
		maxt = t
		n++
	}
	if err := c.samples.Err(); err != nil {
		return nil, err
	}
	if n > 0 {
		out = append(out, chunks.Meta{Chunk: chk, MinTime: mint, MaxTime: maxt})
	}
	return out, nil
}

// errChunks is a chunk iterator that fails at once.
type errChunks struct{ err error }

func (*errChunks) At() chunks.Meta { return chunks.Meta{} }
func (*errChunks) Next() bool      { return false }
func (e *errChunks) Err() error    { return e.err }

// Limits bound what one Series request may read; 0 is no limit.
type Limits struct {
	// MaxSeries a request may select.
	MaxSeries int
	// MaxChunks a request may send, over all its series.
	MaxChunks int
}

// Options configure a Server.
type Options struct {
	// ExternalLabels identify the node, sorted.
	ExternalLabels labels.Labels
	// LowestTime returns the oldest time the store may hold a sample at
	// (math.MaxInt64 while it holds none).
	LowestTime func() int64
	// LabelSets and TimeRange, if set, are what Info advertises in place
	// of ExternalLabels and [LowestTime, now]: for a store whose series
	// carry their external labels themselves, several sets of them (the
	// blocks of a bucket, written by several nodes), over a closed time
	// range (math.MaxInt64, math.MinInt64 while it holds nothing).
	LabelSets func() []labels.Labels
	TimeRange func() (mint, maxt int64)
	Limits    Limits
}

// Server serves the StoreAPI from a ChunkQueryable.
type Server struct {
	storepb.UnimplementedStoreServer
	infopb.UnimplementedInfoServer
	q    storage.ChunkQueryable
	opts Options
}

// New returns a Server over q.
func New(q storage.ChunkQueryable, opts Options) *Server {
	if opts.LowestTime == nil {
		opts.LowestTime = func() int64 { return math.MinInt64 }
	}
	return &Server{q: q, opts: opts}
}

// Register adds the Store and Info services to s. s must use Codec: the
// generated messages are gogo protobuf's.
func (s *Server) Register(g *grpc.Server) {
	storepb.RegisterStoreServer(g, s)
	infopb.RegisterInfoServer(g, s)
}

// minTime is what Info advertises as the oldest data: MinInt64 while the
// store is empty, so that a Querier does not skip a node about to
// receive data (Thanos' sidecar does the same).
func (s *Server) minTime() int64 {
	t := s.opts.LowestTime()
	if t == math.MaxInt64 {
		return math.MinInt64
	}
	return t
}

// Info describes the node: its external labels and time range, and that
// it honours without_replica_labels. It calls itself a sidecar, the
// Thanos component it takes the place of (a node serving its own
// storage under its external labels), or, over the blocks of a bucket
// (Options.LabelSets), a store, as Thanos' store gateway; Querier treats
// the kinds alike for queries.
func (s *Server) Info(context.Context, *infopb.InfoRequest) (*infopb.InfoResponse, error) {
	mint, maxt, kind := s.minTime(), int64(math.MaxInt64), "sidecar"
	sets := []labels.Labels{s.opts.ExternalLabels}
	if s.opts.TimeRange != nil {
		if mint, maxt = s.opts.TimeRange(); mint > maxt {
			mint, maxt = math.MinInt64, math.MaxInt64
		}
	}
	if s.opts.LabelSets != nil {
		// A store over blocks of a bucket, as Thanos' store gateway.
		sets, kind = s.opts.LabelSets(), "store"
	}
	resp := &infopb.InfoResponse{
		ComponentType: kind,
		Store: &infopb.StoreInfo{
			MinTime:                      mint,
			MaxTime:                      maxt,
			SupportsWithoutReplicaLabels: true,
		},
	}
	for _, set := range sets {
		if set.IsEmpty() {
			continue
		}
		z := labelpb.ZLabelSet{Labels: zlabels(set)}
		resp.LabelSets = append(resp.LabelSets, z)
		resp.Store.TsdbInfos = append(resp.Store.TsdbInfos, infopb.TSDBInfo{Labels: z, MinTime: mint, MaxTime: maxt})
	}
	return resp, nil
}

// matchers converts a request's matchers and removes those the external
// labels answer: ok is false if one of them excludes this node.
func (s *Server) matchers(ms []storepb.LabelMatcher) (out []*labels.Matcher, ok bool, err error) {
	pms, err := storepb.MatchersToPromMatchers(ms...)
	if err != nil {
		return nil, false, status.Error(codes.InvalidArgument, err.Error())
	}
	for _, m := range pms {
		if v := s.opts.ExternalLabels.Get(m.Name); v != "" {
			if !m.Matches(v) {
				return nil, false, nil
			}
			continue
		}
		out = append(out, m)
	}
	return out, true, nil
}

// relabel returns what the Querier sees of a series' labels: without
// the names in drop, with the external labels (also without drop)
// added in place of any of the series' own of the same name.
func (s *Server) relabel(b *labels.Builder, lset labels.Labels, drop []string) labels.Labels {
	b.Reset(lset)
	s.opts.ExternalLabels.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
	b.Del(drop...)
	return b.Labels()
}

type selected struct {
	lset   labels.Labels
	series storage.ChunkSeries
}

// Series streams the series the request selects, sorted by their labels
// as sent, each with its chunks over the request's time range (chunks
// may reach beyond it; the Querier trims).
func (s *Server) Series(r *storepb.SeriesRequest, srv storepb.Store_SeriesServer) error {
	ctx := srv.Context()
	ms, ok, err := s.matchers(r.Matchers)
	if err != nil || !ok {
		return err
	}
	if len(ms) == 0 {
		// Only external label matchers, which this node satisfies: all
		// its series, as PromQL's {region="eu"} asks (Thanos' sidecar
		// refuses such a request; a Querier then answers nothing).
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")}
	}
	q, err := s.q.ChunkQuerier(r.MinTime, r.MaxTime)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: r.MinTime, End: r.MaxTime, Limit: int(r.Limit)}
	if h := r.QueryHints; h != nil {
		hints.Step = h.StepMillis
		if h.Func != nil {
			hints.Func = h.Func.Name
		}
		if h.Range != nil {
			hints.Range = h.Range.Millis
		}
		if h.Grouping != nil {
			hints.By, hints.Grouping = h.Grouping.By, h.Grouping.Labels
		}
	}
	if r.SkipChunks {
		hints.Func = "series"
	}
	set := q.Select(ctx, true, hints, ms...)
	var (
		all []selected
		b   = labels.NewBuilder(labels.EmptyLabels())
	)
	for set.Next() {
		if r.Limit > 0 && len(all) == int(r.Limit) {
			break
		}
		if s.opts.Limits.MaxSeries > 0 && len(all) == s.opts.Limits.MaxSeries {
			return status.Errorf(codes.ResourceExhausted, "the request selects more than %d series (--store.limits.request-series)", s.opts.Limits.MaxSeries)
		}
		series := set.At()
		all = append(all, selected{lset: s.relabel(b, series.Labels(), r.WithoutReplicaLabels), series: series})
	}
	if err := set.Err(); err != nil {
		return selectError(ctx, err)
	}
	slices.SortStableFunc(all, func(a, b selected) int { return labels.Compare(a.lset, b.lset) })
	sent := 0
	var (
		it    chunks.Iterator
		raws  []storepb.Chunk // the cached chunks of the series not yet sent
		batch = newBatcher(srv, int(r.ResponseBatchSize))
	)
	for _, sel := range all {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		out := &storepb.Series{Labels: zlabels(sel.lset)}
		if !r.SkipChunks {
			if out.Chunks, raws, it, err = appendChunks(out.Chunks, raws, sel.series, it); err != nil {
				return selectError(ctx, err)
			}
			if sent += len(out.Chunks); s.opts.Limits.MaxChunks > 0 && sent > s.opts.Limits.MaxChunks {
				return status.Errorf(codes.ResourceExhausted, "the request reads more than %d chunks (--store.limits.request-chunks)", s.opts.Limits.MaxChunks)
			}
			if len(out.Chunks) == 0 {
				continue
			}
		}
		flushed, err := batch.add(out)
		if err != nil {
			return err
		}
		if flushed {
			raws = raws[:0]
		}
	}
	if err := batch.flush(); err != nil {
		return err
	}
	for _, w := range set.Warnings() {
		if err := srv.Send(storepb.NewWarnSeriesResponse(w)); err != nil {
			return err
		}
	}
	return nil
}

// batcher sends series as the request's response_batch_size asks: that
// many to a message, as Thanos' stores answer its Querier (64 by
// default), which saves both ends a message's cost for each series; one
// to a message if it is 0 or 1. A series is marshalled when its message
// is sent, so what it points to must be kept until then.
type batcher struct {
	srv     storepb.Store_SeriesServer
	size    int
	pending []*storepb.Series
}

func newBatcher(srv storepb.Store_SeriesServer, size int) *batcher {
	return &batcher{srv: srv, size: size}
}

// add sends s, or keeps it for the next message; flushed says a message
// was sent, with s.
func (b *batcher) add(s *storepb.Series) (flushed bool, err error) {
	if b.size <= 1 {
		return true, b.srv.Send(storepb.NewSeriesResponse(s))
	}
	b.pending = append(b.pending, s)
	if len(b.pending) < b.size {
		return false, nil
	}
	return true, b.flush()
}

// flush sends the series kept, if any.
func (b *batcher) flush() error {
	if len(b.pending) == 0 {
		return nil
	}
	err := b.srv.Send(storepb.NewBatchResponse(b.pending))
	clear(b.pending)
	b.pending = b.pending[:0]
	return err
}

// appendChunks appends a series' chunks to dst: from the cache of its
// set if it has one and the series is of stored chunks (their Raws
// appended to raws, see appendCached), else encoded from its samples by
// it, which it returns for the next series.
func appendChunks(dst []storepb.AggrChunk, raws []storepb.Chunk, s storage.ChunkSeries, it chunks.Iterator) ([]storepb.AggrChunk, []storepb.Chunk, chunks.Iterator, error) {
	if es, ok := s.(encodedSeries); ok {
		if dst, raws, ok, err := es.appendCached(dst, raws); ok || err != nil {
			return dst, raws, it, err
		}
	}
	it = s.Iterator(it)
	for it.Next() {
		m := it.At()
		dst = append(dst, storepb.AggrChunk{
			MinTime: m.MinTime,
			MaxTime: m.MaxTime,
			// Prometheus' encodings are one more than the protocol's:
			// XOR 1 and 0, histogram 2 and 1, float histogram 3 and 2.
			Raw: &storepb.Chunk{Type: storepb.Chunk_Encoding(m.Chunk.Encoding() - 1), Data: slices.Clone(m.Chunk.Bytes())},
		})
	}
	return dst, raws, it, it.Err()
}

// selectError turns a storage error into a gRPC status: the Querier's
// cancellation as such, the rest as internal.
func selectError(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(context.Cause(ctx)).Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// LabelNames answers the label names of the series the matchers select
// in the request's time range, the external labels' among them.
func (s *Server) LabelNames(ctx context.Context, r *storepb.LabelNamesRequest) (*storepb.LabelNamesResponse, error) {
	ms, ok, err := s.matchers(r.Matchers)
	if err != nil || !ok {
		return &storepb.LabelNamesResponse{}, err
	}
	q, err := s.q.ChunkQuerier(r.Start, r.End)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer q.Close()
	names, warns, err := q.LabelNames(ctx, &storage.LabelHints{Limit: int(r.Limit)}, ms...)
	if err != nil {
		return nil, selectError(ctx, err)
	}
	if len(names) > 0 || len(ms) == 0 {
		s.opts.ExternalLabels.Range(func(l labels.Label) { names = append(names, l.Name) })
	}
	names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(r.WithoutReplicaLabels, n) })
	slices.Sort(names)
	names = slices.Compact(names)
	if r.Limit > 0 && len(names) > int(r.Limit) {
		names = names[:r.Limit]
	}
	return &storepb.LabelNamesResponse{Names: names, Warnings: warnings(warns.AsErrors())}, nil
}

// LabelValues answers a label's values over the series the matchers
// select; an external label's value is its own.
func (s *Server) LabelValues(ctx context.Context, r *storepb.LabelValuesRequest) (*storepb.LabelValuesResponse, error) {
	if r.Label == "" {
		return nil, status.Error(codes.InvalidArgument, "no label name")
	}
	if slices.Contains(r.WithoutReplicaLabels, r.Label) {
		return &storepb.LabelValuesResponse{}, nil
	}
	ms, ok, err := s.matchers(r.Matchers)
	if err != nil || !ok {
		return &storepb.LabelValuesResponse{}, err
	}
	q, err := s.q.ChunkQuerier(r.Start, r.End)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer q.Close()
	if v := s.opts.ExternalLabels.Get(r.Label); v != "" {
		if len(ms) > 0 {
			// The value is the node's if any series matches.
			names, _, err := q.LabelNames(ctx, &storage.LabelHints{Limit: 1}, ms...)
			if err != nil {
				return nil, selectError(ctx, err)
			}
			if len(names) == 0 {
				return &storepb.LabelValuesResponse{}, nil
			}
		}
		return &storepb.LabelValuesResponse{Values: []string{v}}, nil
	}
	values, warns, err := q.LabelValues(ctx, r.Label, &storage.LabelHints{Limit: int(r.Limit)}, ms...)
	if err != nil {
		return nil, selectError(ctx, err)
	}
	return &storepb.LabelValuesResponse{Values: values, Warnings: warnings(warns.AsErrors())}, nil
}

func warnings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// zlabels copies lset into the protocol's labels. (labelpb's own
// conversion reinterprets memory in a way only Prometheus' slicelabels
// build allows; strata is built with its default, stringlabels.)
func zlabels(lset labels.Labels) []labelpb.ZLabel {
	out := make([]labelpb.ZLabel, 0, lset.Len())
	lset.Range(func(l labels.Label) { out = append(out, labelpb.ZLabel{Name: l.Name, Value: l.Value}) })
	return out
}

// Codec marshals the services' gogo protobuf messages with their own
// generated code; register it on the server with
// grpc.ForceServerCodec(Codec{}).
type Codec struct{}

type gogoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// Name is the codec's content subtype, protobuf's.
func (Codec) Name() string { return "proto" }

// Marshal encodes a generated message.
func (Codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(gogoMessage)
	if !ok {
		return nil, fmt.Errorf("storeapi: cannot encode %T", v)
	}
	return m.Marshal()
}

// Unmarshal decodes a generated message.
func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(gogoMessage)
	if !ok {
		return fmt.Errorf("storeapi: cannot decode into %T", v)
	}
	return m.Unmarshal(data)
}
