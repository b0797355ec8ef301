package bucket

import (
	"context"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"

	"github.com/strata-db/strata/internal/block"
	schunkenc "github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/vfs"
)

// samples reads every sample of the series ms select, keyed by labels.
func samples(t *testing.T, q storage.Querier, ms ...*labels.Matcher) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	set := q.Select(context.Background(), true, nil, ms...)
	var prev labels.Labels
	for set.Next() {
		s := set.At()
		if !prev.IsEmpty() && labels.Compare(prev, s.Labels()) >= 0 {
			t.Errorf("series out of order: %s after %s", s.Labels(), prev)
		}
		prev = s.Labels()
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], fmt.Sprintf("%d:%g", ts, v))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var nameM = labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")

// uploadAs writes blocks at the given start times on a node with the
// given external labels and uploads them.
func uploadAs(t *testing.T, bkt objstore.Bucket, external labels.Labels, mints ...int64) []block.Meta {
	t.Helper()
	dir := t.TempDir()
	var metas []block.Meta
	for _, mint := range mints {
		metas = append(metas, writeBlockIn(t, vfs.OS{}, dir, mint, 1, nil))
	}
	blocks := &blockList{}
	blocks.set(metas...)
	opts := DefaultShipperOptions()
	opts.Dir, opts.Bucket, opts.ExternalLabels, opts.Blocks = dir, bkt, external, blocks.get
	if err := NewShipper(opts).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return metas
}

func newTestStore(t *testing.T, bkt objstore.BucketReader, dir string) *Store {
	t.Helper()
	opts := DefaultStoreOptions()
	opts.Bucket, opts.Dir, opts.CacheBytes = bkt, dir, 1<<20
	s := NewStore(opts)
	t.Cleanup(func() { s.Close() })
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreServesBucket uploads the blocks of three nodes (an HA pair
// and another region, one of the pair with two blocks overlapping in
// time) and reads them back through a Store: every sample as written,
// each series with its node's external labels, once.
func TestStoreServesBucket(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) objstore.Bucket{
		"inmem": func(*testing.T) objstore.Bucket { return objstore.NewInMemBucket() },
		"filesystem": func(t *testing.T) objstore.Bucket {
			b, err := filesystem.NewBucket(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	} {
		t.Run(name, func(t *testing.T) { testStoreServesBucket(t, open(t)) })
	}
}

func testStoreServesBucket(t *testing.T, bkt objstore.Bucket) {
	a := labels.FromStrings("region", "eu", "replica", "a")
	b := labels.FromStrings("region", "eu", "replica", "b")
	us := labels.FromStrings("region", "us")
	uploadAs(t, bkt, a, 0, 1000, 500)
	uploadAs(t, bkt, b, 0)
	uploadAs(t, bkt, us, 1000)
	// Half an upload: files without a meta.json are not a block.
	if err := bkt.Upload(context.Background(), path.Join(ulid.Make().String(), "index"), strings.NewReader("partial")); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	s := newTestStore(t, bkt, cache)

	if got := s.LabelSets(); len(got) != 3 || !labels.Equal(got[0], a) || !labels.Equal(got[1], b) || !labels.Equal(got[2], us) {
		t.Errorf("label sets %v", got)
	}
	if mint, maxt := s.TimeRange(); mint != 0 || maxt != 1999 {
		t.Errorf("time range [%d, %d]", mint, maxt)
	}
	q, err := s.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	got := samples(t, q, nameM)
	// Chunks came by range requests, most from pages read already: a
	// page holds the chunks of many series.
	misses, hits := testutil.ToFloat64(s.metrics.pageMisses), testutil.ToFloat64(s.metrics.pageHits)
	if misses == 0 || hits <= misses {
		t.Errorf("chunk pages: %g requests, %g hits", misses, hits)
	}
	// What each block holds: series i has i*j at mint+100j, j < 10.
	want := map[string][]string{}
	add := func(ext labels.Labels, mints ...int64) {
		for i := range 20 {
			b := labels.NewBuilder(labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%02d", i)))
			ext.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
			key := b.Labels().String()
			var ts []int64
			vals := map[int64]string{}
			for _, mint := range mints {
				for j := range 10 {
					at := mint + int64(j*100)
					if _, ok := vals[at]; !ok {
						ts = append(ts, at)
					}
					// The overlapping blocks hold different values for
					// the same times; the merge keeps one of them.
					vals[at] = fmt.Sprintf("%d:%g", at, float64(i*j))
				}
			}
			slices.Sort(ts)
			for _, at := range ts {
				want[key] = append(want[key], vals[at])
			}
		}
	}
	add(a, 0, 500, 1000)
	add(b, 0)
	add(us, 1000)
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for key, w := range want {
		g := got[key]
		if len(g) != len(w) {
			t.Errorf("%s: %d samples, want %d", key, len(g), len(w))
			continue
		}
		for i := range g {
			// Times agree; at the overlap, either block's value.
			var gt, wt int64
			fmt.Sscanf(g[i], "%d:", &gt)
			fmt.Sscanf(w[i], "%d:", &wt)
			if gt != wt {
				t.Errorf("%s: sample %d at %d, want %d", key, i, gt, wt)
				break
			}
		}
	}

	// Matchers on external labels are answered by the label sets.
	replicaB := labels.MustNewMatcher(labels.MatchEqual, "replica", "b")
	if got := samples(t, q, nameM, replicaB); len(got) != 20 {
		t.Errorf("replica=b selects %d series, want 20", len(got))
	}
	if got := samples(t, q, labels.MustNewMatcher(labels.MatchEqual, "region", "us")); len(got) != 20 {
		t.Errorf("region=us alone selects %d series, want 20", len(got))
	}
	names, _, err := q.LabelNames(context.Background(), nil)
	if err != nil || !slices.Equal(names, []string{"__name__", "i", "region", "replica"}) {
		t.Errorf("label names %v, %v", names, err)
	}
	values, _, err := q.LabelValues(context.Background(), "replica", nil, nameM)
	if err != nil || !slices.Equal(values, []string{"a", "b"}) {
		t.Errorf("replica values %v, %v", values, err)
	}
	values, _, err = q.LabelValues(context.Background(), "region", nil, replicaB)
	if err != nil || !slices.Equal(values, []string{"eu"}) {
		t.Errorf("region values of replica b %v, %v", values, err)
	}

	// Local copies of the indexes, and no more.
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 5 {
		t.Errorf("index cache holds %d entries, want 5: %v", len(entries), err)
	}
}

// TestStoreJoinsBlocks reads a series over three blocks that follow one
// another as one series over their chunks, as the store reads its own
// blocks, so that the StoreAPI's cache of stored chunks serves it.
func TestStoreJoinsBlocks(t *testing.T) {
	bkt := objstore.NewInMemBucket()
	uploadAs(t, bkt, labels.FromStrings("region", "us"), 2000, 0, 1000)
	s := newTestStore(t, bkt, t.TempDir())
	q, err := s.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), true, nil, nameM)
	n := 0
	for ; set.Next(); n++ {
		u, ok := set.At().(interface{ Unwrap() storage.Series })
		if !ok {
			t.Fatalf("%s: a %T, not the external labels' wrapper", set.At().Labels(), set.At())
		}
		cs, ok := u.Unwrap().(*schunkenc.Series)
		if !ok || len(cs.Chunks) != 3 || cs.Chunks[0].MinT != 0 || cs.Chunks[2].MinT != 2000 {
			t.Fatalf("%s: read as a %T, not one series over the three blocks' chunks in order", set.At().Labels(), u.Unwrap())
		}
	}
	if err := set.Err(); err != nil || n != 20 {
		t.Fatalf("%d series, %v", n, err)
	}
	for key, got := range samples(t, q, nameM) {
		if len(got) != 30 {
			t.Errorf("%s: %d samples, want 30", key, len(got))
		}
	}
}

// TestStoreFollowsBucket checks that Sync opens blocks added to the
// bucket and closes (and forgets the index of) those deleted from it,
// and that a store started over an index cache reads the same.
func TestStoreFollowsBucket(t *testing.T) {
	bkt := objstore.NewInMemBucket()
	ext := labels.FromStrings("region", "eu")
	first := uploadAs(t, bkt, ext, 0)
	cache := t.TempDir()
	s := newTestStore(t, bkt, cache)
	count := func(s *Store) int {
		q, err := s.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		n := 0
		for _, v := range samples(t, q, nameM) {
			n += len(v)
		}
		return n
	}
	if n := count(s); n != 200 {
		t.Fatalf("%d samples, want 200", n)
	}
	uploadAs(t, bkt, ext, 1000)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(s); n != 400 {
		t.Errorf("%d samples after a block was added, want 400", n)
	}
	if n := count(newTestStore(t, bkt, cache)); n != 400 {
		t.Errorf("a store over the index cache reads %d samples, want 400", n)
	}
	id := first[0].ULID.String()
	if err := bkt.Delete(context.Background(), path.Join(id, metaFilename)); err != nil {
		t.Fatal(err)
	}
	for name := range bkt.Objects() {
		if path.Dir(path.Dir(name)) == id || path.Dir(name) == id {
			bkt.Delete(context.Background(), name)
		}
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(s); n != 200 {
		t.Errorf("%d samples after a block was deleted, want 200", n)
	}
	if _, err := os.Stat(filepath.Join(cache, id)); !os.IsNotExist(err) {
		t.Errorf("index copy of a deleted block kept: %v", err)
	}
}

// TestPageCacheBound checks that the page cache keeps the pages read
// last within its bound.
func TestPageCacheBound(t *testing.T) {
	c := newPageCache(3*pageSize, prometheus.NewCounter(prometheus.CounterOpts{Name: "hits"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "misses"}))
	for i := range 5 {
		c.put(pageKey{"x", int64(i)}, make([]byte, pageSize))
	}
	if c.pages.Size() != 3*pageSize {
		t.Fatalf("cache of %d bytes, want %d", c.pages.Size(), 3*pageSize)
	}
	for i := range 5 {
		if _, ok := c.get(pageKey{"x", int64(i)}); ok != (i >= 2) {
			t.Errorf("page %d cached: %v", i, ok)
		}
	}
}
