package storeapi_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
	"github.com/thanos-io/thanos/pkg/info/infopb"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/storeapi"
)

const (
	t0   = int64(1_790_000_000_000)
	step = int64(15_000)
	n    = 200 // samples a series
)

// sample is what a test expects back: a float or an integer histogram.
type sample struct {
	t int64
	v float64
	h *histogram.Histogram
}

// fixture is a store holding floats and native histograms, served over
// a real gRPC connection.
type fixture struct {
	server *storeapi.Server
	store  storepb.StoreClient
	info   infopb.InfoClient
	want   map[string][]sample // by the series' stored labels
	// messages counts the series messages of the last series call:
	// one a series, or one a batch.
	messages int
}

var stored = []labels.Labels{
	labels.FromStrings("__name__", "up", "job", "a"),
	labels.FromStrings("__name__", "up", "job", "b", "zone", "z"),
	labels.FromStrings("__name__", "m"),
	labels.FromStrings("__name__", "m", "b", "1"),
	labels.FromStrings("__name__", "m", "replica", "stored"),
}

var hist = labels.FromStrings("__name__", "h", "job", "a")

func open(t testing.TB, opts storeapi.Options) *fixture {
	t.Helper()
	return openCached(t, opts, nil)
}

// openCached is open with the store's chunks sent through the cache c,
// unless c is nil.
func openCached(t testing.TB, opts storeapi.Options, c *storeapi.Cache) *fixture {
	t.Helper()
	store := openDB(t)
	f := &fixture{want: map[string][]sample{}}
	app := store.Appender(context.Background())
	for i, lset := range stored {
		for j := range int64(n) {
			s := sample{t: t0 + j*step, v: float64(i*1000) + float64(j)*0.5}
			var st int64
			if i == 0 {
				// A cumulative series with its start time, as OTLP and
				// remote-write 2.0 send it: the StoreAPI's chunks have
				// no room for it, and must still be XOR.
				st = t0 - 60_000
			}
			if _, err := app.Append(0, lset, storage.Sample{T: s.t, V: s.v, ST: st}); err != nil {
				t.Fatal(err)
			}
			f.want[lset.String()] = append(f.want[lset.String()], s)
		}
	}
	for j := range int64(n) {
		s := sample{t: t0 + j*step, h: tsdbutil.GenerateTestHistogram(j)}
		if _, err := app.Append(0, hist, storage.Sample{T: s.t, H: s.h, ST: t0 - 60_000}); err != nil {
			t.Fatal(err)
		}
		f.want[hist.String()] = append(f.want[hist.String()], s)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	f.serve(t, store, opts, c)
	return f
}

// openDB opens an empty store in a temporary directory, closed when t
// ends.
func openDB(t testing.TB) *db.DB {
	t.Helper()
	dbo := db.DefaultOptions()
	dbo.Dir = t.TempDir()
	dbo.CompactionInterval = 0
	store := db.Open(dbo)
	if err := store.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// serve serves store's StoreAPI over a real gRPC connection, stopped
// when t ends, and gives f its server and clients; the chunks go
// through the cache c unless it is nil.
func (f *fixture) serve(t testing.TB, store *db.DB, opts storeapi.Options, c *storeapi.Cache) {
	t.Helper()
	if opts.LowestTime == nil {
		opts.LowestTime = store.LowestTime
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(storeapi.Codec{}))
	src := storeapi.Chunks(store)
	if c != nil {
		src = storeapi.CachedChunks(store, c)
	}
	f.server = storeapi.New(src, opts)
	f.server.Register(srv)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(storeapi.Codec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f.store = storepb.NewStoreClient(conn)
	f.info = infopb.NewInfoClient(conn)
}

// series runs a Series request and returns its series and warnings, or
// the call's error.
func (f *fixture) series(t testing.TB, r *storepb.SeriesRequest) ([]*storepb.Series, []string, error) {
	t.Helper()
	stream, err := f.store.Series(context.Background(), r)
	if err != nil {
		return nil, nil, err
	}
	var (
		out   []*storepb.Series
		warns []string
	)
	f.messages = 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, warns, nil
		}
		if err != nil {
			return out, warns, err
		}
		if s := resp.GetSeries(); s != nil {
			out = append(out, s)
			f.messages++
		} else if b := resp.GetBatch(); b != nil {
			out = append(out, b.Series...)
			f.messages++
		} else if w := resp.GetWarning(); w != "" {
			warns = append(warns, w)
		}
	}
}

func names(ss []*storepb.Series) []string {
	var out []string
	for _, s := range ss {
		b := labels.NewScratchBuilder(len(s.Labels))
		for _, l := range s.Labels {
			b.Add(l.Name, l.Value)
		}
		out = append(out, b.Labels().String())
	}
	return out
}

// decode reads a series' chunks back with Prometheus' decoders, as a
// Querier does, keeping the samples in [mint, maxt].
func decode(t *testing.T, s *storepb.Series, mint, maxt int64) []sample {
	t.Helper()
	var out []sample
	for _, c := range s.Chunks {
		if c.Raw == nil {
			t.Fatalf("%v: a chunk without raw data", s.Labels)
		}
		chk, err := chunkenc.FromData(chunkenc.Encoding(c.Raw.Type+1), c.Raw.Data)
		if err != nil {
			t.Fatalf("%v: %v", s.Labels, err)
		}
		it := chk.Iterator(nil)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			var smp sample
			switch vt {
			case chunkenc.ValFloat:
				smp.t, smp.v = it.At()
			case chunkenc.ValHistogram:
				smp.t, smp.h = it.AtHistogram(nil)
			default:
				t.Fatalf("%v: unexpected value type %v", s.Labels, vt)
			}
			if smp.t < c.MinTime || smp.t > c.MaxTime {
				t.Fatalf("%v: sample at %d outside its chunk's [%d, %d]", s.Labels, smp.t, c.MinTime, c.MaxTime)
			}
			if smp.t >= mint && smp.t <= maxt {
				out = append(out, smp)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func equal(a, b []sample) bool {
	return slices.EqualFunc(a, b, func(x, y sample) bool {
		if x.t != y.t || math.Float64bits(x.v) != math.Float64bits(y.v) {
			return false
		}
		if (x.h == nil) != (y.h == nil) {
			return false
		}
		return x.h == nil || x.h.Equals(y.h)
	})
}

func window(ss []sample, mint, maxt int64) []sample {
	var out []sample
	for _, s := range ss {
		if s.t >= mint && s.t <= maxt {
			out = append(out, s)
		}
	}
	return out
}

func re(name, value string) storepb.LabelMatcher {
	return storepb.LabelMatcher{Type: storepb.LabelMatcher_RE, Name: name, Value: value}
}

func eq(name, value string) storepb.LabelMatcher {
	return storepb.LabelMatcher{Type: storepb.LabelMatcher_EQ, Name: name, Value: value}
}

func ext(kv ...string) storeapi.Options {
	return storeapi.Options{ExternalLabels: labels.FromStrings(kv...)}
}

func TestInfo(t *testing.T) {
	f := open(t, ext("region", "eu", "replica", "a"))
	info, err := f.info.Info(context.Background(), &infopb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Store == nil || info.Store.MinTime != t0 || info.Store.MaxTime != math.MaxInt64 || !info.Store.SupportsWithoutReplicaLabels {
		t.Fatalf("store info %+v, want min time %d, max time MaxInt64, without_replica_labels", info.Store, t0)
	}
	if len(info.LabelSets) != 1 || labelsOf(info.LabelSets[0].Labels) != `{region="eu", replica="a"}` {
		t.Fatalf("label sets %v", info.LabelSets)
	}
	if len(info.Store.TsdbInfos) != 1 || info.Store.TsdbInfos[0].MinTime != t0 {
		t.Fatalf("TSDB infos %v", info.Store.TsdbInfos)
	}

	// An empty store advertises all time, so that a Querier asks it.
	empty := open(t, storeapi.Options{LowestTime: func() int64 { return math.MaxInt64 }})
	info, err = empty.info.Info(context.Background(), &infopb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Store.MinTime != math.MinInt64 || len(info.LabelSets) != 0 {
		t.Fatalf("empty store info %+v, label sets %v", info.Store, info.LabelSets)
	}
}

func labelsOf(zl []labelpb.ZLabel) string {
	b := labels.NewScratchBuilder(len(zl))
	for _, l := range zl {
		b.Add(l.Name, l.Value)
	}
	return b.Labels().String()
}

// TestSeriesSamples reads every series back, chunks encoded anew or
// from the cache, one series to a message or in batches of 4 as a
// Querier asks (response_batch_size): the same samples as appended.
func TestSeriesSamples(t *testing.T) {
	for _, batch := range []int{0, 4} {
		t.Run("encoded,batch="+strconv.Itoa(batch), func(t *testing.T) { testSeriesSamples(t, open(t, storeapi.Options{}), batch) })
		t.Run("cached,batch="+strconv.Itoa(batch), func(t *testing.T) {
			testSeriesSamples(t, openCached(t, storeapi.Options{}, storeapi.NewCache(64<<20, nil, nil)), batch)
		})
	}
}

func testSeriesSamples(t *testing.T, f *fixture, batch int) {
	mint, maxt := t0+10*step, t0+150*step
	got, warns, err := f.series(t, &storepb.SeriesRequest{
		MinTime: mint, MaxTime: maxt, ResponseBatchSize: int64(batch),
		Matchers: []storepb.LabelMatcher{re("__name__", ".+")},
	})
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	if want := map[int]int{0: 6, 4: 2}[batch]; f.messages != want {
		t.Errorf("batches of %d: %d messages for 6 series, want %d", batch, f.messages, want)
	}
	want := []string{`{__name__="h", job="a"}`, `{__name__="m"}`, `{__name__="m", b="1"}`, `{__name__="m", replica="stored"}`, `{__name__="up", job="a"}`, `{__name__="up", job="b", zone="z"}`}
	if !slices.Equal(names(got), want) {
		t.Fatalf("series\n%q\nwant\n%q", names(got), want)
	}
	for _, s := range got {
		name := names([]*storepb.Series{s})[0]
		for _, c := range s.Chunks {
			if c.Raw.Type != storepb.Chunk_XOR && name != hist.String() || name == hist.String() && c.Raw.Type != storepb.Chunk_HISTOGRAM {
				t.Errorf("%s: chunk type %v", name, c.Raw.Type)
			}
		}
		if w := window(f.want[name], mint, maxt); !equal(decode(t, s, mint, maxt), w) {
			t.Errorf("%s: samples differ from the %d appended", name, len(w))
		}
	}
}

// The cache is asked once for each stored chunk a request reads: the
// first request encodes them, the same request again finds them all,
// and the pieces sent are cut at ten minutes, the span of 40 samples at
// 15 s (pieceSpan).
func TestSeriesCache(t *testing.T) {
	hits, misses := prometheus.NewCounter(prometheus.CounterOpts{Name: "hits"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "misses"})
	c := storeapi.NewCache(64<<20, hits, misses)
	f := openCached(t, storeapi.Options{}, c)
	mint, maxt := t0+10*step, t0+150*step
	r := &storepb.SeriesRequest{MinTime: mint, MaxTime: maxt, Matchers: []storepb.LabelMatcher{eq("__name__", "m")}}
	check := func() {
		t.Helper()
		got, _, err := f.series(t, r)
		if err != nil || len(got) != 3 {
			t.Fatalf("%d series, %v", len(got), err)
		}
		for _, s := range got {
			name := names([]*storepb.Series{s})[0]
			if w := window(f.want[name], mint, maxt); !equal(decode(t, s, mint, maxt), w) {
				t.Errorf("%s: samples differ from the %d appended", name, len(w))
			}
			for _, chk := range s.Chunks {
				if chk.MinTime/600_000 != chk.MaxTime/600_000 {
					t.Errorf("%s: a chunk over [%d, %d] crosses ten minutes", name, chk.MinTime, chk.MaxTime)
				}
			}
		}
	}
	check()
	stored := testutil.ToFloat64(misses)
	if stored == 0 || testutil.ToFloat64(hits) != 0 || c.Size() == 0 {
		t.Fatalf("first request: %v misses, %v hits, %d bytes", stored, testutil.ToFloat64(hits), c.Size())
	}
	check()
	if testutil.ToFloat64(hits) != stored || testutil.ToFloat64(misses) != stored {
		t.Fatalf("the same request again: %v hits and %v misses, want %v and %v", testutil.ToFloat64(hits), testutil.ToFloat64(misses), stored, stored)
	}

	// A cache too small for any chunk answers the same, encoding each
	// request's chunks.
	small := storeapi.NewCache(64, nil, nil)
	f = openCached(t, storeapi.Options{}, small)
	check()
	if small.Size() != 0 {
		t.Fatalf("a cache of 64 bytes holds %d", small.Size())
	}
}

func TestSeriesExternalLabels(t *testing.T) {
	f := open(t, ext("region", "eu", "replica", "a"))
	all := func(ms ...storepb.LabelMatcher) *storepb.SeriesRequest {
		return &storepb.SeriesRequest{MinTime: t0, MaxTime: t0 + n*step, Matchers: ms}
	}

	// The external labels are added, in place of a stored label of the
	// same name, and the answer is sorted by the labels sent: adding
	// them puts {b="1"} before the series without b.
	got, _, err := f.series(t, all(eq("__name__", "m")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{__name__="m", b="1", region="eu", replica="a"}`,
		`{__name__="m", region="eu", replica="a"}`,
		`{__name__="m", region="eu", replica="a"}`,
	}
	if !slices.Equal(names(got), want) {
		t.Fatalf("series\n%q\nwant\n%q", names(got), want)
	}

	// Without the replica label, as a deduplicating Querier asks.
	r := all(eq("__name__", "m"))
	r.WithoutReplicaLabels = []string{"replica"}
	got, _, err = f.series(t, r)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`{__name__="m", b="1", region="eu"}`, `{__name__="m", region="eu"}`, `{__name__="m", region="eu"}`}
	if !slices.Equal(names(got), want) {
		t.Fatalf("without replica: series\n%q\nwant\n%q", names(got), want)
	}

	// Matchers on external labels select the node or none of it.
	got, _, err = f.series(t, all(eq("__name__", "up"), eq("region", "eu"), re("replica", "a|b")))
	if err != nil || len(got) != 2 {
		t.Fatalf("matching external labels: %d series, %v", len(got), err)
	}
	got, _, err = f.series(t, all(eq("__name__", "up"), eq("region", "us")))
	if err != nil || len(got) != 0 {
		t.Fatalf("another region: %d series, %v", len(got), err)
	}
	// Only external label matchers: every series of the node, as
	// {region="eu"} selects in PromQL over the Querier.
	every, _, err := f.series(t, all(re("__name__", ".+")))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = f.series(t, all(eq("region", "eu")))
	if err != nil || len(got) == 0 || !slices.Equal(names(got), names(every)) {
		t.Fatalf("external label matchers only: %q, %v; want %q", names(got), err, names(every))
	}
	_, _, err = f.series(t, all(re("__name__", "(")))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad regular expression: %v, want InvalidArgument", err)
	}
}

func TestSeriesSkipChunksAndTimeRange(t *testing.T) {
	f := open(t, storeapi.Options{})
	got, _, err := f.series(t, &storepb.SeriesRequest{
		MinTime: t0, MaxTime: t0 + n*step, SkipChunks: true,
		Matchers: []storepb.LabelMatcher{eq("__name__", "up")},
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("skip chunks: %d series, %v", len(got), err)
	}
	for _, s := range got {
		if len(s.Chunks) != 0 {
			t.Fatalf("skip chunks: %v has %d chunks", s.Labels, len(s.Chunks))
		}
	}
	// A range after the data selects nothing.
	got, _, err = f.series(t, &storepb.SeriesRequest{
		MinTime: t0 + 2*n*step, MaxTime: t0 + 3*n*step,
		Matchers: []storepb.LabelMatcher{eq("__name__", "up")},
	})
	if err != nil || len(got) != 0 {
		t.Fatalf("after the data: %d series, %v", len(got), err)
	}
	// Limit bounds the series sent.
	got, _, err = f.series(t, &storepb.SeriesRequest{
		MinTime: t0, MaxTime: t0 + n*step, Limit: 2,
		Matchers: []storepb.LabelMatcher{re("__name__", ".+")},
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("limit 2: %d series, %v", len(got), err)
	}
}

func TestSeriesLimits(t *testing.T) {
	f := open(t, storeapi.Options{Limits: storeapi.Limits{MaxSeries: 2}})
	r := &storepb.SeriesRequest{MinTime: t0, MaxTime: t0 + n*step, Matchers: []storepb.LabelMatcher{eq("__name__", "up")}}
	if _, _, err := f.series(t, r); err != nil {
		t.Fatalf("2 series at a limit of 2: %v", err)
	}
	r.Matchers = []storepb.LabelMatcher{eq("__name__", "m")}
	if _, _, err := f.series(t, r); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("3 series at a limit of 2: %v, want ResourceExhausted", err)
	}

	// 200 samples are two chunks of Prometheus' (it cuts at 120).
	f = open(t, storeapi.Options{Limits: storeapi.Limits{MaxChunks: 2}})
	r.Matchers = []storepb.LabelMatcher{eq("__name__", "up"), eq("job", "a")}
	if _, _, err := f.series(t, r); err != nil {
		t.Fatalf("two chunks at a limit of 2: %v", err)
	}
	r.Matchers = []storepb.LabelMatcher{eq("__name__", "up")}
	if _, _, err := f.series(t, r); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("four chunks at a limit of 2: %v, want ResourceExhausted", err)
	}
}

func TestLabelNamesAndValues(t *testing.T) {
	f := open(t, ext("region", "eu", "replica", "a"))
	ctx := context.Background()
	start, end := t0, t0+n*step

	ln, err := f.store.LabelNames(ctx, &storepb.LabelNamesRequest{Start: start, End: end})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"__name__", "b", "job", "region", "replica", "zone"}; !slices.Equal(ln.Names, want) {
		t.Fatalf("label names %q, want %q", ln.Names, want)
	}
	ln, err = f.store.LabelNames(ctx, &storepb.LabelNamesRequest{Start: start, End: end,
		Matchers: []storepb.LabelMatcher{eq("__name__", "up")}, WithoutReplicaLabels: []string{"replica"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"__name__", "job", "region", "zone"}; !slices.Equal(ln.Names, want) {
		t.Fatalf("label names of up without replica %q, want %q", ln.Names, want)
	}
	ln, err = f.store.LabelNames(ctx, &storepb.LabelNamesRequest{Start: start, End: end,
		Matchers: []storepb.LabelMatcher{eq("__name__", "none")}})
	if err != nil || len(ln.Names) != 0 {
		t.Fatalf("label names of no series: %q, %v", ln, err)
	}
	ln, err = f.store.LabelNames(ctx, &storepb.LabelNamesRequest{Start: start, End: end,
		Matchers: []storepb.LabelMatcher{eq("region", "us")}})
	if err != nil || len(ln.Names) != 0 {
		t.Fatalf("label names in another region: %q, %v", ln, err)
	}

	lv, err := f.store.LabelValues(ctx, &storepb.LabelValuesRequest{Label: "job", Start: start, End: end})
	if err != nil || !slices.Equal(lv.Values, []string{"a", "b"}) {
		t.Fatalf("job values %q, %v", lv, err)
	}
	lv, err = f.store.LabelValues(ctx, &storepb.LabelValuesRequest{Label: "replica", Start: start, End: end})
	if err != nil || !slices.Equal(lv.Values, []string{"a"}) {
		t.Fatalf("replica values %q, %v: the external label, not the stored one", lv, err)
	}
	lv, err = f.store.LabelValues(ctx, &storepb.LabelValuesRequest{Label: "region", Start: start, End: end,
		Matchers: []storepb.LabelMatcher{eq("__name__", "none")}})
	if err != nil || len(lv.Values) != 0 {
		t.Fatalf("region values of no series %q, %v", lv, err)
	}
	lv, err = f.store.LabelValues(ctx, &storepb.LabelValuesRequest{Label: "zone", Start: start, End: end,
		Matchers: []storepb.LabelMatcher{eq("__name__", "up"), eq("job", "a")}})
	if err != nil || len(lv.Values) != 0 {
		t.Fatalf("zone values of up{job=a} %q, %v", lv, err)
	}
	if _, err := f.store.LabelValues(ctx, &storepb.LabelValuesRequest{Start: start, End: end}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no label name: %v, want InvalidArgument", err)
	}
}

// sink is a Series stream to call the server on in-process.
type sink struct {
	grpc.ServerStream
	n int
}

func (s *sink) Context() context.Context { return context.Background() }

func (s *sink) Send(r *storepb.SeriesResponse) error {
	if _, err := r.Marshal(); err != nil {
		return err
	}
	s.n++
	return nil
}

// FuzzSeriesRequest decodes bytes as the server does and serves them,
// with and without the cache: whatever decodes is answered or refused
// with InvalidArgument, never a panic or another error.
func FuzzSeriesRequest(f *testing.F) {
	for _, r := range []*storepb.SeriesRequest{
		{MinTime: t0, MaxTime: t0 + n*step, Matchers: []storepb.LabelMatcher{re("__name__", ".+")}},
		{MinTime: t0, MaxTime: t0 + n*step, SkipChunks: true, Limit: 1, WithoutReplicaLabels: []string{"replica"},
			Matchers: []storepb.LabelMatcher{eq("region", "eu"), {Type: storepb.LabelMatcher_NRE, Name: "job", Value: "b"}}},
	} {
		b, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	servers := []*storeapi.Server{
		open(f, ext("region", "eu", "replica", "a")).server,
		openCached(f, ext("region", "eu", "replica", "a"), storeapi.NewCache(1<<20, nil, nil)).server,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r storepb.SeriesRequest
		if (storeapi.Codec{}).Unmarshal(data, &r) != nil {
			return
		}
		for _, srv := range servers {
			err := srv.Series(&r, &sink{})
			if c := status.Code(err); c != codes.OK && c != codes.InvalidArgument {
				t.Fatalf("%+v: %v", &r, err)
			}
		}
	})
}

// BenchmarkSeries asks for 2,000 float series of two hours at 15 s, as
// an instant rate over five minutes and as a range query over the two
// hours do, over a real gRPC connection, in batches of 64 series to a
// message as Thanos' Querier asks: with the chunks encoded anew, the
// re-encoding of the store's chunks into XOR is most of what a Series
// call costs; with the cache (as strata store serves), the chunks
// encoded by the first call.
func BenchmarkSeries(b *testing.B) {
	store := openDB(b)
	const series, samples = 2000, 480
	app := store.Appender(context.Background())
	for i := range series {
		lset := labels.FromStrings("__name__", "node_cpu_seconds_total", "cpu", strconv.Itoa(i%16), "instance", strconv.Itoa(i/16))
		for j := range int64(samples) {
			if _, err := app.Append(0, lset, storage.Sample{T: t0 + j*step, V: float64(i) + float64(j)*0.01}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		b.Fatal(err)
	}
	encoded, cached := &fixture{}, &fixture{}
	encoded.serve(b, store, storeapi.Options{}, nil)
	cached.serve(b, store, storeapi.Options{}, storeapi.NewCache(256<<20, nil, nil))
	end := t0 + (samples-1)*step
	for _, src := range []struct {
		name string
		f    *fixture
	}{{"encoded", encoded}, {"cached", cached}} {
		for _, bc := range []struct {
			name       string
			mint, maxt int64
		}{{"5m", end - 5*60_000, end}, {"2h", t0, end}} {
			b.Run(src.name+"/"+bc.name, func(b *testing.B) {
				r := &storepb.SeriesRequest{MinTime: bc.mint, MaxTime: bc.maxt, ResponseBatchSize: 64,
					Matchers: []storepb.LabelMatcher{eq("__name__", "node_cpu_seconds_total")}}
				for b.Loop() {
					got, _, err := src.f.series(b, r)
					if err != nil || len(got) != series {
						b.Fatalf("%d series, %v", len(got), err)
					}
				}
			})
		}
	}
}
