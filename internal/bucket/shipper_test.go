package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/vfs"
	"github.com/strata-db/strata/internal/vfs/crashfs"
)

const dataDir = "data"

var external = labels.FromStrings("region", "eu", "replica", "a")

// writeBlock writes a block of a few float series over [mint, mint+999]
// into dataDir, with a small segment size so that it has several chunk
// files.
func writeBlock(t *testing.T, fs vfs.FS, mint int64, level int, sources []ulid.ULID) block.Meta {
	t.Helper()
	return writeBlockIn(t, fs, dataDir, mint, level, sources)
}

func writeBlockIn(t *testing.T, fs vfs.FS, dir string, mint int64, level int, sources []ulid.ULID) block.Meta {
	t.Helper()
	w, err := block.NewWriter(dir, block.WriterOptions{MinTime: mint, MaxTime: mint + 999, Level: level, Sources: sources, SegmentSize: 300, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		xc := chunkenc.NewXORChunk()
		for j := range 10 {
			xc.Append(mint+int64(j*100), float64(i*j))
		}
		meta := chunkenc.Meta{Data: xc.Bytes(), MinT: mint, MaxT: mint + 900, Enc: chunkenc.EncXOR}
		if err := w.AddSeries(labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%02d", i)), []chunkenc.Meta{meta}, nil); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// blockList is what the store's Blocks returns; tests change it.
type blockList struct {
	mu     sync.Mutex
	blocks []block.Meta
}

func (l *blockList) get() []block.Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.blocks)
}

func (l *blockList) set(blocks ...block.Meta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocks = blocks
}

func newTestShipper(fs vfs.FS, bkt objstore.Bucket, blocks *blockList, reg prometheus.Registerer) *Shipper {
	return newTestShipperIn(fs, dataDir, bkt, blocks, reg)
}

func newTestShipperIn(fs vfs.FS, dir string, bkt objstore.Bucket, blocks *blockList, reg prometheus.Registerer) *Shipper {
	opts := DefaultShipperOptions()
	opts.Dir, opts.FS, opts.Bucket, opts.ExternalLabels, opts.Blocks, opts.Registerer = dir, fs, bkt, external, blocks.get, reg
	return NewShipper(opts)
}

// countingBucket counts uploads and, once failAfter of them have run,
// fails every call that changes the bucket, as a bucket gone away or a
// process killed would: nothing after that point reaches it.
type countingBucket struct {
	objstore.Bucket
	mu        sync.Mutex
	uploads   []string
	failAfter int // -1: never
}

var errBucketDown = errors.New("bucket unavailable")

func newCountingBucket(inner objstore.Bucket) *countingBucket {
	return &countingBucket{Bucket: inner, failAfter: -1}
}

func (b *countingBucket) down() bool {
	return b.failAfter >= 0 && len(b.uploads) >= b.failAfter
}

func (b *countingBucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	b.mu.Lock()
	if b.down() {
		b.mu.Unlock()
		return errBucketDown
	}
	b.uploads = append(b.uploads, name)
	b.mu.Unlock()
	return b.Bucket.Upload(ctx, name, r, opts...)
}

func (b *countingBucket) Delete(ctx context.Context, name string) error {
	b.mu.Lock()
	down := b.down()
	b.mu.Unlock()
	if down {
		return errBucketDown
	}
	return b.Bucket.Delete(ctx, name)
}

func (b *countingBucket) metaUploads() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, name := range b.uploads {
		if path.Base(name) == metaFilename {
			n++
		}
	}
	return n
}

// checkBucket checks that every block of the bucket with a meta.json is
// whole: its meta.json is the local one with the thanos section, and
// every other file is in the bucket with the local file's bytes. It
// returns the ULIDs of the whole blocks.
func checkBucket(t *testing.T, fs vfs.FS, bkt objstore.BucketReader) []ulid.ULID {
	t.Helper()
	return checkBucketIn(t, fs, dataDir, bkt)
}

func checkBucketIn(t *testing.T, fs vfs.FS, dir string, bkt objstore.BucketReader) []ulid.ULID {
	t.Helper()
	var ids []ulid.ULID
	objects := map[string][]byte{}
	err := bkt.Iter(context.Background(), "", func(name string) error {
		r, err := bkt.Get(context.Background(), name)
		if err != nil {
			return err
		}
		defer r.Close()
		objects[name], err = io.ReadAll(r)
		return err
	}, objstore.WithRecursiveIter())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range objects {
		if path.Base(name) != metaFilename {
			continue
		}
		var m Meta
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		id := m.ULID
		if path.Dir(name) != id.String() {
			t.Errorf("%s holds the meta of %s", name, id)
		}
		local, err := block.ReadMeta(block.FSFiles{FS: fs, Dir: filepath.Join(dir, id.String())})
		if err != nil {
			t.Fatalf("local meta of %s: %v", id, err)
		}
		local.Stats.Bytes = 0
		if m.Thanos.Source != "strata" || m.Thanos.Downsample.Resolution != 0 || !labels.Equal(labels.FromMap(m.Thanos.Labels), external) {
			t.Errorf("%s: thanos section %+v", name, m.Thanos)
		}
		m.Thanos = ThanosMeta{}
		gotMeta, _ := json.Marshal(m.Meta)
		wantMeta, _ := json.Marshal(local)
		if !bytes.Equal(gotMeta, wantMeta) {
			t.Errorf("%s: meta %s, want %s", name, gotMeta, wantMeta)
		}
		for prefix := range objects {
			if strings.HasPrefix(prefix, id.String()+"/") && prefix != name {
				rel := strings.TrimPrefix(prefix, id.String()+"/")
				want := readLocal(t, fs, filepath.Join(dir, id.String(), rel))
				if !bytes.Equal(objects[prefix], want) {
					t.Errorf("%s differs from the local file", prefix)
				}
			}
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		var m Meta
		if err := json.Unmarshal(objects[path.Join(id.String(), metaFilename)], &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Thanos.Files) < 2 {
			t.Errorf("%s lists files %v, want the index and chunks", id, m.Thanos.Files)
		}
		for _, f := range m.Thanos.Files {
			data, ok := objects[path.Join(id.String(), f.RelPath)]
			if !ok || int64(len(data)) != f.SizeBytes {
				t.Errorf("%s: file %s of %d bytes listed, in the bucket: %v, %d bytes", id, f.RelPath, f.SizeBytes, ok, len(data))
			}
		}
	}
	slices.SortFunc(ids, ulid.ULID.Compare)
	return ids
}

func readLocal(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ids(metas ...block.Meta) []ulid.ULID {
	var out []ulid.ULID
	for _, m := range metas {
		out = append(out, m.ULID)
	}
	slices.SortFunc(out, ulid.ULID.Compare)
	return out
}

// TestShipperUploads uploads the head's blocks once each, leaves a merge
// of uploaded blocks alone and uploads a merged block whose sources were
// never uploaded.
func TestShipperUploads(t *testing.T) {
	fs := crashfs.New()
	inner := objstore.NewInMemBucket()
	bkt := newCountingBucket(inner)
	a, b := writeBlock(t, fs, 0, 1, nil), writeBlock(t, fs, 1000, 1, nil)
	blocks := &blockList{}
	blocks.set(a, b)
	reg := prometheus.NewRegistry()
	s := newTestShipper(fs, bkt, blocks, reg)
	if s.Shipped(a) {
		t.Fatal("a block counts as shipped before any upload")
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := checkBucket(t, fs, inner), ids(a, b); !slices.Equal(got, want) {
		t.Fatalf("blocks in the bucket %v, want %v", got, want)
	}
	if !s.Shipped(a) || !s.Shipped(b) {
		t.Error("uploaded blocks do not count as shipped")
	}
	if got := testutil.ToFloat64(s.metrics.uploads); got != 2 {
		t.Errorf("uploads counted: %g", got)
	}
	if got := testutil.ToFloat64(s.metrics.pending); got != 0 {
		t.Errorf("pending after sync: %g", got)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := bkt.metaUploads(); n != 2 {
		t.Errorf("%d meta.json uploads after a second sync, want 2", n)
	}

	// The store merges a and b: the merge's samples are in the bucket.
	merged := writeBlock(t, fs, 0, 2, []ulid.ULID{a.ULID, b.ULID})
	blocks.set(merged)
	if !s.Shipped(merged) {
		t.Error("a merge of uploaded blocks does not count as shipped")
	}
	// A block of another start, merged before uploads were turned on.
	old := writeBlock(t, fs, 5000, 2, []ulid.ULID{ulid.Make(), ulid.Make()})
	blocks.set(merged, old)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := checkBucket(t, fs, inner), ids(a, b, old); !slices.Equal(got, want) {
		t.Errorf("blocks in the bucket %v, want %v", got, want)
	}
	if n := bkt.metaUploads(); n != 3 {
		t.Errorf("%d meta.json uploads, want 3", n)
	}

	// A restart reads the record: nothing is uploaded again, nor looked
	// for in the bucket.
	s = newTestShipper(fs, bkt, blocks, nil)
	if !s.Shipped(merged) || !s.Shipped(old) {
		t.Error("the record did not survive a restart")
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := bkt.metaUploads(); n != 3 {
		t.Errorf("%d meta.json uploads after restart, want 3", n)
	}
}

// TestShipperRecordLost checks that a missing or damaged record costs a
// look in the bucket, not a second upload.
func TestShipperRecordLost(t *testing.T) {
	for name, damage := range map[string]func(vfs.FS) error{
		"missing": func(fs vfs.FS) error { return fs.Remove(filepath.Join(dataDir, recordFilename)) },
		"damaged": func(fs vfs.FS) error {
			f, err := fs.OpenFile(filepath.Join(dataDir, recordFilename), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte(`{"version":1,"uplo`))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			fs := crashfs.New()
			inner := objstore.NewInMemBucket()
			bkt := newCountingBucket(inner)
			a := writeBlock(t, fs, 0, 1, nil)
			blocks := &blockList{}
			blocks.set(a)
			if err := newTestShipper(fs, bkt, blocks, nil).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := damage(fs); err != nil {
				t.Fatal(err)
			}
			s := newTestShipper(fs, bkt, blocks, nil)
			if s.Shipped(a) {
				t.Fatal("shipped without a record")
			}
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := bkt.metaUploads(); n != 1 {
				t.Errorf("%d meta.json uploads, want 1", n)
			}
			if !s.Shipped(a) || !newTestShipper(fs, bkt, blocks, nil).Shipped(a) {
				t.Error("record not rebuilt from the bucket")
			}
		})
	}
}

// TestShipperCrashes cuts an upload short at every call to the bucket
// and every change to the data directory, as a kill -9 or a bucket that
// goes away would, then restarts on what a crash leaves of the disk: no
// block is ever half-visible (a meta.json without all the block's files),
// and after the restart every block is in the bucket, whole, once.
func TestShipperCrashes(t *testing.T) {
	setup := func() (*crashfs.FS, []block.Meta) {
		fs := crashfs.New()
		return fs, []block.Meta{writeBlock(t, fs, 0, 1, nil), writeBlock(t, fs, 1000, 1, nil)}
	}
	// A run without faults counts the calls to walk through.
	fs, metas := setup()
	clean := newCountingBucket(objstore.NewInMemBucket())
	blocks := &blockList{}
	blocks.set(metas...)
	fs.CrashAfter(-1)
	if err := newTestShipper(fs, clean, blocks, nil).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	uploads := len(clean.uploads)
	for failAfter := range uploads + 1 {
		for crashAfter := range 6 {
			t.Run(fmt.Sprintf("upload=%d/disk=%d", failAfter, crashAfter), func(t *testing.T) {
				fs, metas := setup()
				blocks := &blockList{}
				blocks.set(metas...)
				inner := objstore.NewInMemBucket()
				bkt := newCountingBucket(inner)
				bkt.failAfter = failAfter
				fs.CrashAfter(crashAfter)
				err := newTestShipper(fs, bkt, blocks, nil).Sync(context.Background())
				if failAfter < uploads && err == nil {
					t.Fatal("sync succeeded against a failing bucket")
				}
				checkBucket(t, fs, inner)

				after := fs.Crash()
				bkt.failAfter = -1
				before := bkt.metaUploads()
				s := newTestShipper(after, bkt, blocks, nil)
				if err := s.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got, want := checkBucket(t, after, inner), ids(metas...); !slices.Equal(got, want) {
					t.Fatalf("blocks in the bucket after restart %v, want %v", got, want)
				}
				if n := bkt.metaUploads(); n != 2 {
					t.Errorf("each block's meta.json uploaded %d times in all (%d before the crash), want once", n, before)
				}
			})
		}
	}
}

// TestShipperBlockGone checks that a block deleted locally while it
// waited (retention) is skipped, not retried forever.
func TestShipperBlockGone(t *testing.T) {
	fs := crashfs.New()
	inner := objstore.NewInMemBucket()
	a, b := writeBlock(t, fs, 0, 1, nil), writeBlock(t, fs, 1000, 1, nil)
	blocks := &blockList{}
	blocks.set(a, b)
	if err := fs.RemoveAll(filepath.Join(dataDir, a.ULID.String())); err != nil {
		t.Fatal(err)
	}
	s := newTestShipper(fs, inner, blocks, nil)
	// The store's list still has a: the upload fails and is retried.
	if err := s.Sync(context.Background()); err == nil {
		t.Fatal("a block that cannot be read was not reported")
	}
	blocks.set(b)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := checkBucket(t, fs, inner), ids(b); !slices.Equal(got, want) {
		t.Errorf("blocks in the bucket %v, want %v", got, want)
	}
}

// TestShipperRunRetries runs the loop against a bucket that fails a few
// times: it retries with a growing backoff until the block is up, and
// uploads a block it is told of at once.
func TestShipperRunRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := crashfs.New()
		inner := objstore.NewInMemBucket()
		bkt := newCountingBucket(inner)
		bkt.failAfter = 0
		a := writeBlock(t, fs, 0, 1, nil)
		blocks := &blockList{}
		blocks.set(a)
		s := newTestShipper(fs, bkt, blocks, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx)
		}()
		synctest.Wait()
		if got := testutil.ToFloat64(s.metrics.failures); got != 1 {
			t.Fatalf("failures after the first pass: %g", got)
		}
		// 5 s, then 10 s: two more failures by 15 s.
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if got := testutil.ToFloat64(s.metrics.failures); got != 3 {
			t.Fatalf("failures after 15 s: %g, want 3", got)
		}
		bkt.mu.Lock()
		bkt.failAfter = -1
		bkt.mu.Unlock()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if !s.Shipped(a) {
			t.Fatal("not uploaded once the bucket is back")
		}
		b := writeBlock(t, fs, 1000, 1, nil)
		blocks.set(a, b)
		s.Notify()
		synctest.Wait()
		if !s.Shipped(b) {
			t.Error("a block Notify told of waits for the interval")
		}
		cancel()
		<-done
	})
}
