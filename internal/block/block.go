package block

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/tombstones"
)

// Block is an open, immutable block: its meta, its index and its chunk
// segments, read through a Files. It is safe for concurrent use.
//
// Queriers hold the block open: Close waits until every querier it handed
// out is closed, so a block being replaced by compaction or deleted by
// retention is never unmapped under a running query.
type Block struct {
	meta   Meta
	index  *index.Reader
	chunks *chunkReader
	src    Source // the index file
	// stones are the samples deleted from its series (see Delete),
	// never nil; queriers read those stored when they were opened.
	stones atomic.Pointer[tombstones.Stones]

	mu      sync.Mutex
	readers int       // queriers not yet closed
	closing bool      // Close was called: no new queriers
	idle    sync.Cond // signalled when readers drops to 0
}

// Open opens the block whose files fs reads. It reads meta.json and the
// index's tables; it does not read chunks.
func Open(fs Files) (*Block, error) {
	meta, err := ReadMeta(fs)
	if err != nil {
		return nil, err
	}
	src, err := fs.Open(indexFilename)
	if err != nil {
		return nil, err
	}
	ir, err := index.NewReader(src)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("block %s: %w", meta.ULID, err)
	}
	cr, err := openChunks(fs, chunksDirname)
	if err != nil {
		ir.Close()
		src.Close()
		return nil, fmt.Errorf("block %s: %w", meta.ULID, err)
	}
	stones, err := readTombstones(fs)
	if err != nil {
		ir.Close()
		src.Close()
		cr.close()
		return nil, fmt.Errorf("block %s: %w", meta.ULID, err)
	}
	meta.Stats.Bytes = src.Size() + cr.size()
	b := &Block{meta: meta, index: ir, chunks: cr, src: src}
	b.stones.Store(&stones)
	b.idle.L = &b.mu
	return b, nil
}

// Meta returns the block's meta.
func (b *Block) Meta() Meta { return b.meta }

// acquire registers a reader; it fails once Close was called.
func (b *Block) acquire() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return ErrClosed
	}
	b.readers++
	return nil
}

func (b *Block) release() {
	b.mu.Lock()
	b.readers--
	if b.readers == 0 {
		b.idle.Broadcast()
	}
	b.mu.Unlock()
}

// ErrClosed is returned for a querier asked of a closed block.
var ErrClosed = errors.New("block closed")

// Close waits for the block's queriers to be closed and releases its
// files.
func (b *Block) Close() error {
	b.mu.Lock()
	b.closing = true
	for b.readers > 0 {
		b.idle.Wait()
	}
	b.mu.Unlock()
	return errors.Join(b.index.Close(), b.src.Close(), b.chunks.close())
}
