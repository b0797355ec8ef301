package bucket

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/lru"
)

// remoteFiles reads a block of a bucket (block.Files): meta.json from
// memory, the index from a local copy made the first time the block is
// opened (a query reads the index all over; the local copy is mapped),
// and the chunk segments by range requests through a page cache.
type remoteFiles struct {
	bkt      objstore.BucketReader
	id       ulid.ULID
	meta     []byte
	sizes    map[string]int64 // from the meta.json's thanos.files
	indexDir string           // where the local copy of the index goes
	pages    *pageCache
}

func (f *remoteFiles) Open(name string) (block.Source, error) {
	switch {
	case name == metaFilename:
		return bytesSource{bytes.NewReader(f.meta)}, nil
	case name == "index":
		return f.openIndex()
	}
	size, ok := f.sizes[name]
	if !ok {
		return nil, fmt.Errorf("block %s: no file %s in its meta.json: %w", f.id, name, os.ErrNotExist)
	}
	return &pagedSource{bkt: f.bkt, name: path.Join(f.id.String(), name), size: size, pages: f.pages}, nil
}

func (f *remoteFiles) List(dir string) ([]string, error) {
	var names []string
	for name := range f.sizes {
		if d, base := path.Split(name); strings.TrimSuffix(d, "/") == dir {
			names = append(names, base)
		}
	}
	slices.Sort(names)
	return names, nil
}

// openIndex maps the local copy of the index, downloading it first if
// there is none: to a temporary name, renamed once whole, so that a
// crash never leaves a partial copy under the real name.
func (f *remoteFiles) openIndex() (block.Source, error) {
	dir := filepath.Join(f.indexDir, f.id.String())
	local := filepath.Join(dir, "index")
	if st, err := os.Stat(local); err == nil && st.Size() == f.sizes["index"] {
		return block.LocalFiles(dir).Open("index")
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	r, err := f.bkt.Get(context.Background(), path.Join(f.id.String(), "index"))
	if err != nil {
		return nil, fmt.Errorf("block %s: get index: %w", f.id, err)
	}
	defer r.Close()
	tmp, err := os.CreateTemp(dir, "index.*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("block %s: download index: %w", f.id, err)
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return nil, err
	}
	return block.LocalFiles(dir).Open("index")
}

type bytesSource struct{ *bytes.Reader }

func (bytesSource) Close() error { return nil }

// pagedSource reads an object by ranges of whole pages, through the page
// cache: a chunk's header and its data, and the neighbouring chunks of
// the next series, come with one request.
type pagedSource struct {
	bkt   objstore.BucketReader
	name  string
	size  int64
	pages *pageCache
}

func (s *pagedSource) Size() int64  { return s.size }
func (s *pagedSource) Close() error { return nil }

func (s *pagedSource) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > s.size {
		return 0, fmt.Errorf("read %s at %d of %d bytes", s.name, off, s.size)
	}
	n := 0
	for n < len(p) && off < s.size {
		idx := off / pageSize
		page, err := s.page(idx)
		if err != nil {
			return n, err
		}
		c := copy(p[n:], page[off-idx*pageSize:])
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s *pagedSource) page(idx int64) ([]byte, error) {
	key := pageKey{s.name, idx}
	if b, ok := s.pages.get(key); ok {
		return b, nil
	}
	start := idx * pageSize
	length := min(pageSize, s.size-start)
	r, err := s.bkt.GetRange(context.Background(), s.name, start, length)
	if err != nil {
		return nil, fmt.Errorf("get %s [%d, %d): %w", s.name, start, start+length, err)
	}
	defer r.Close()
	b := make([]byte, length)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("get %s [%d, %d): %w", s.name, start, start+length, err)
	}
	s.pages.put(key, b)
	return b, nil
}

// pageSize is the unit of range requests for chunks: 64 KiB holds a
// few hundred chunks of a two-hour block, so the series a query reads
// one after another (postings are in label order, and chunks are
// written in that order) mostly share requests, while a request for a
// single chunk costs little more latency than one of its size.
const pageSize = 64 << 10

type pageKey struct {
	name string
	idx  int64
}

// pageCache holds the chunk pages read last, up to a number of bytes,
// counting its lookups.
type pageCache struct {
	hits, misses prometheus.Counter
	pages        *lru.Cache[pageKey, []byte]
}

func newPageCache(limit int64, hits, misses prometheus.Counter) *pageCache {
	return &pageCache{hits: hits, misses: misses, pages: lru.New[pageKey](limit, func(b []byte) int64 { return int64(len(b)) })}
}

func (c *pageCache) get(k pageKey) ([]byte, bool) {
	b, ok := c.pages.Get(k)
	if ok {
		c.hits.Inc()
	} else {
		c.misses.Inc()
	}
	return b, ok
}

func (c *pageCache) put(k pageKey, b []byte) { c.pages.Add(k, b) }
