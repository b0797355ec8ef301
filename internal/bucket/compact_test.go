package bucket

import (
	"context"
	"errors"
	"io"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
)

// newTestCompactor compacts bkt as of the time *now says, with the test
// blocks' range (1000 ms) as the nodes'.
func newTestCompactor(t *testing.T, bkt objstore.Bucket, now *time.Time, retention time.Duration) *Compactor {
	opts := DefaultCompactorOptions()
	opts.Bucket, opts.Dir, opts.BlockRange, opts.Retention = bkt, t.TempDir(), 1000, retention
	opts.Now = func() time.Time { return *now }
	return NewCompactor(opts)
}

// bucketBlocks returns the blocks of the bucket (with a meta.json) and
// those of them marked for deletion.
func bucketBlocks(t *testing.T, bkt objstore.BucketReader) (blocks []Meta, marked []ulid.ULID) {
	t.Helper()
	l, err := listBucket(context.Background(), bkt)
	if err != nil {
		t.Fatal(err)
	}
	for id := range l.blocks {
		m, _, err := readMeta(context.Background(), bkt, id)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, m)
		if l.marked[id] {
			marked = append(marked, id)
		}
	}
	slices.SortFunc(blocks, func(a, b Meta) int { return a.ULID.Compare(b.ULID) })
	return blocks, marked
}

// served returns the ULIDs of the blocks a Store serves.
func served(s *Store) []ulid.ULID {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.SortedFunc(maps.Keys(s.blocks), ulid.ULID.Compare)
}

func allSamples(t *testing.T, s *Store) map[string][]string {
	t.Helper()
	q, err := s.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	return samples(t, q, nameM)
}

// TestCompactorMerges uploads the blocks of two nodes, compacts the
// bucket and checks that each node's full window of three blocks became
// one block with their sources, the sources are marked and the newest
// block left alone, and that a Store reads the same samples before,
// after, and after the marked blocks are deleted.
func TestCompactorMerges(t *testing.T) {
	bkt := objstore.NewInMemBucket()
	a, b := labels.FromStrings("replica", "a"), labels.FromStrings("replica", "b")
	srcA := uploadAs(t, bkt, a, 0, 1000, 2000, 3000)
	srcB := uploadAs(t, bkt, b, 0, 1000, 2000)
	store := newTestStore(t, bkt, t.TempDir())
	want := allSamples(t, store)
	if len(want) != 40 {
		t.Fatalf("%d series before compaction", len(want))
	}

	now := time.Now()
	c := newTestCompactor(t, bkt, &now, 0)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks, marked := bucketBlocks(t, bkt)
	// A's window [0, 3000) is full; of B's, the newest block waits and
	// the two before it are merged, as a node merges its own.
	if len(blocks) != 9 || len(marked) != 5 {
		t.Fatalf("%d blocks, %d marked; want 9 and 5", len(blocks), len(marked))
	}
	var merged []Meta
	for _, m := range blocks {
		if m.Level > 1 {
			merged = append(merged, m)
		}
	}
	slices.SortFunc(merged, func(x, y Meta) int { return strings.Compare(x.Thanos.Labels["replica"], y.Thanos.Labels["replica"]) })
	if len(merged) != 2 {
		t.Fatalf("merged blocks %+v", merged)
	}
	for i, w := range []struct {
		ext     labels.Labels
		maxt    int64
		sources []block.Meta
	}{{a, 2999, srcA[:3]}, {b, 1999, srcB[:2]}} {
		m := merged[i]
		if !labels.Equal(labels.FromMap(m.Thanos.Labels), w.ext) || m.MinTime != 0 || m.MaxTime != w.maxt ||
			!slices.Equal(m.Sources, ids(w.sources...)) || m.Thanos.Source != source || len(m.Thanos.Files) == 0 {
			t.Errorf("merged block %+v", m)
		}
	}
	if want := sortIDs(append(ids(srcA[:3]...), ids(srcB[:2]...)...)); !slices.Equal(sortIDs(marked), want) {
		t.Errorf("marked %v, want %v", marked, want)
	}

	if err := store.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := served(store); !slices.Contains(got, merged[0].ULID) || slices.Contains(got, srcA[0].ULID) {
		t.Errorf("store serves %v", got)
	}
	if got := allSamples(t, store); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("after the merge the store reads %d series, not the %d it read before", len(got), len(want))
	}

	// Marks are kept for the delay, then the blocks go.
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if blocks, _ := bucketBlocks(t, bkt); len(blocks) != 9 {
		t.Errorf("%d blocks before the delete delay, want 9", len(blocks))
	}
	now = now.Add(49 * time.Hour)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks, marked = bucketBlocks(t, bkt)
	if len(blocks) != 4 || len(marked) != 0 {
		t.Errorf("%d blocks, %d marked after the delay; want the merges and the newest blocks, unmarked", len(blocks), len(marked))
	}
	for _, m := range srcA[:3] {
		if objs, _ := c.objects(context.Background(), m.ULID); len(objs) > 0 {
			t.Errorf("block %s left %v", m.ULID, objs)
		}
	}
	if err := store.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := allSamples(t, store); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("after the deletion the store reads %d series, not %d", len(got), len(want))
	}
}

// TestCompactorRetention marks the blocks older than the retention,
// which a Store then stops serving, and deletes them after the delay.
func TestCompactorRetention(t *testing.T) {
	bkt := objstore.NewInMemBucket()
	ext := labels.FromStrings("replica", "a")
	metas := uploadAs(t, bkt, ext, 0, 10_000)
	store := newTestStore(t, bkt, t.TempDir())

	// 10 s after the first block's end: only it is beyond 5 s.
	now := time.UnixMilli(11_000)
	c := newTestCompactor(t, bkt, &now, 5*time.Second)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, marked := bucketBlocks(t, bkt); !slices.Equal(marked, ids(metas[0])) {
		t.Fatalf("marked %v, want %v", marked, ids(metas[0]))
	}
	if err := store.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := served(store); !slices.Equal(got, ids(metas[1])) {
		t.Errorf("store serves %v, want %v", got, ids(metas[1]))
	}
	now = now.Add(48 * time.Hour)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The first block is gone; the second is beyond the retention by
	// now too, and marked.
	if blocks, marked := bucketBlocks(t, bkt); len(blocks) != 1 || blocks[0].ULID != metas[1].ULID || !slices.Equal(marked, ids(metas[1])) {
		t.Errorf("%d blocks, marked %v after the delay; want the second, marked", len(blocks), marked)
	}
}

// failingMarks fails the upload of deletion marks after the first n.
type failingMarks struct {
	objstore.Bucket
	mu sync.Mutex
	n  int
}

func (b *failingMarks) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	if path.Base(name) == deletionMarkFilename {
		b.mu.Lock()
		fail := b.n <= 0
		b.n--
		b.mu.Unlock()
		if fail {
			return errBucketDown
		}
	}
	return b.Bucket.Upload(ctx, name, r, opts...)
}

// TestCompactorCutShort fails the compactor after the merged block is
// uploaded and one source marked: a Store serves the merge in place of
// its sources meanwhile (no sample twice), and the next pass marks the
// rest.
func TestCompactorCutShort(t *testing.T) {
	inner := objstore.NewInMemBucket()
	ext := labels.FromStrings("replica", "a")
	metas := uploadAs(t, inner, ext, 0, 1000, 2000, 3000)
	store := newTestStore(t, inner, t.TempDir())
	want := allSamples(t, store)

	bkt := &failingMarks{Bucket: inner, n: 1}
	now := time.Now()
	c := newTestCompactor(t, bkt, &now, 0)
	if err := c.Compact(context.Background()); !errors.Is(err, errBucketDown) {
		t.Fatalf("compaction with marks failing: %v", err)
	}
	blocks, marked := bucketBlocks(t, inner)
	if len(blocks) != 5 || len(marked) != 1 {
		t.Fatalf("%d blocks, %d marked", len(blocks), len(marked))
	}
	if err := store.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := served(store); len(got) != 2 || !slices.Contains(got, metas[3].ULID) {
		t.Errorf("store serves %v: want the merge and the newest block", got)
	}
	if got := allSamples(t, store); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("with the marks cut short the store reads %d series, not %d", len(got), len(want))
	}

	bkt.n = math.MaxInt
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, marked := bucketBlocks(t, inner); !slices.Equal(sortIDs(marked), ids(metas[:3]...)) {
		t.Errorf("marked %v, want the three sources", marked)
	}
}

func sortIDs(ids []ulid.ULID) []ulid.ULID {
	return slices.SortedFunc(slices.Values(ids), ulid.ULID.Compare)
}

// TestCompactorPartialUploads deletes a directory without meta.json only
// once its objects are older than the delay, and leaves the blocks of
// other writers, and one whose meta.json does not read, alone.
func TestCompactorPartialUploads(t *testing.T) {
	bkt := objstore.NewInMemBucket()
	ctx := context.Background()
	partial := ulid.Make()
	if err := bkt.Upload(ctx, path.Join(partial.String(), "index"), strings.NewReader("partial")); err != nil {
		t.Fatal(err)
	}
	// A block of Prometheus' format a Thanos sidecar uploaded.
	other := ulid.Make()
	for _, name := range []string{"index", "chunks/000001"} {
		if err := bkt.Upload(ctx, path.Join(other.String(), name), strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	meta := `{"ulid":"` + other.String() + `","minTime":0,"maxTime":1000,"version":1,"level":1,"thanos":{"labels":{"replica":"p"},"source":"sidecar"}}`
	if err := bkt.Upload(ctx, path.Join(other.String(), metaFilename), strings.NewReader(meta)); err != nil {
		t.Fatal(err)
	}
	// A meta.json that does not read: left alone, the pass goes on.
	garbled := ulid.Make()
	if err := bkt.Upload(ctx, path.Join(garbled.String(), metaFilename), strings.NewReader("{not json")); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(47 * time.Hour)
	c := newTestCompactor(t, bkt, &now, time.Hour)
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if objs, _ := c.objects(ctx, partial); len(objs) != 1 {
		t.Errorf("partial upload deleted before the delay: %v", objs)
	}
	now = now.Add(2 * time.Hour)
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if objs, _ := c.objects(ctx, partial); len(objs) != 0 {
		t.Errorf("partial upload kept after the delay: %v", objs)
	}
	if objs, _ := c.objects(ctx, other); len(objs) != 3 {
		t.Errorf("block of another writer touched: %v", objs)
	}
	if objs, _ := c.objects(ctx, garbled); len(objs) != 1 {
		t.Errorf("block with a garbled meta.json touched: %v", objs)
	}
	// Neither is served by a store, which syncs all the same.
	if s := newTestStore(t, bkt, t.TempDir()); len(served(s)) != 0 {
		t.Errorf("store serves %v", served(s))
	}
}
