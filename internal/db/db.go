// Package db is the store as the server sees it: the head with its WAL
// and the persisted blocks, read through one Queryable. It opens in the
// background so that the server can answer health probes while the WAL
// replays, and compacts the head into blocks and applies retention in
// the background once open.
//
// # On disk
//
//	<dir>/wal/            the head's write-ahead log and checkpoints
//	<dir>/<ULID>/         a block: meta.json, index, chunks/
//	<dir>/<ULID>.tmp/     a block being written or deleted
//
// # Crash safety
//
// A block is written under its .tmp name and renamed into place once
// every file in it is fsynced; a block is deleted by renaming it to its
// .tmp name first. Open removes every .tmp directory, so a crash at any
// step leaves either the block whole or no trace of it. The head is
// truncated, and its WAL checkpointed, only after the block holding its
// oldest range is in place: a crash in between replays the WAL into the
// head, which Open then truncates below the newest block again, so no
// acknowledged sample is ever only in a block that may not exist.
package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs"
)

// chunksHeadDir is where the head keeps its closed chunks (Options.Dir).
const chunksHeadDir = "chunks_head"

// Options configures a DB.
type Options struct {
	// Dir is the data directory; the WAL is in Dir/wal and, when FS is
	// nil, the head's closed chunks in Dir/chunks_head.
	Dir  string
	Head head.Options // WALDir and ChunkDir are set from Dir
	// RetentionTime is how long blocks are kept: a block is deleted once
	// its newest sample is older than the newest sample of the store by
	// more than this. 0 keeps blocks however old.
	RetentionTime time.Duration
	// RetentionSize bounds the bytes of blocks, WAL and head chunk files
	// together: the oldest blocks are deleted while they are over it. 0
	// means no bound.
	RetentionSize int64
	// MaxBlockDuration bounds the blocks merged from smaller ones; 0
	// means the smaller of 31 days and a tenth of RetentionTime. Set to
	// the block range, it turns merging off.
	MaxBlockDuration time.Duration
	// CompactionInterval is how often retention is applied and merges
	// planned. The head is written to a block as soon as it spans one and
	// a half block ranges (head.Compactable), and also checked then.
	CompactionInterval time.Duration
	// FS is the file system of the data directory; nil means the
	// operating system's. Tests put a crash-simulating one here.
	FS vfs.FS
	// Shipped, if set, reports whether a block's samples are kept
	// elsewhere too (uploaded to object storage): a block that is not is
	// merged only once it is, so that a merge never deletes samples the
	// uploader has not sent. Retention still deletes it, with a warning.
	Shipped func(block.Meta) bool
	// BlockWritten, if set, is called after a block written from the
	// head has joined the store's blocks.
	BlockWritten func()
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock that says when late samples before the head's
	// floor are due to be written (a block range after the last time);
	// nil means time.Now. Tests whose block range is a second set it.
	Now func() time.Time
}

// DefaultOptions returns the options strata runs with unless told
// otherwise.
func DefaultOptions() Options {
	return Options{
		Dir:  "data",
		Head: head.DefaultOptions(),
		// Prometheus' default --storage.tsdb.retention.time.
		RetentionTime: 15 * 24 * time.Hour,
		// A minute is short next to a two-hour block range, and a check
		// that finds nothing to do costs next to nothing.
		CompactionInterval: time.Minute,
	}
}

// DB is the store. Until it is ready, appenders fail with
// storage.ErrNotReady and queriers return it.
//
// mu guards head, blocks and err. head is nil until the replay is done
// and is not changed after that. blocks is replaced, never changed in
// place, so a reader may keep the slice it read under mu.
type DB struct {
	opts   Options
	fs     vfs.FS
	logger *slog.Logger
	ready  chan struct{}

	mu     sync.RWMutex
	head   *head.Head
	blocks []*block.Block // by MinTime
	err    error

	// compactMu lets one compaction or retention pass run at a time.
	// It guards lateWritten and lateMark: when compactHead last wrote
	// late samples before the head's floor, and the head's count of late
	// samples then.
	compactMu   sync.Mutex
	lateWritten time.Time
	lateMark    uint64
	stop        chan struct{}
	stopped     chan struct{}

	stats stats
}

type stats struct {
	compactions        atomic.Uint64
	compactionFailures atomic.Uint64
	compactionNs       atomic.Int64
	retentionDeletions atomic.Uint64
}

// Stats are the store's counters beyond the head's.
type Stats struct {
	Blocks             int
	BlockBytes         int64
	Compactions        uint64 // blocks written from the head or merged
	CompactionFailures uint64
	CompactionTime     time.Duration // spent compacting, in total
	RetentionDeletions uint64        // blocks deleted by retention
}

// Open starts opening the store in opts.Dir in the background and returns
// at once. Ready and Wait tell when it is done.
func Open(opts Options) *DB {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db := &DB{opts: opts, fs: vfs.Or(opts.FS), logger: logger, ready: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{}),
		lateWritten: opts.Now()}
	go func() {
		h, blocks, err := db.open()
		db.mu.Lock()
		db.head, db.blocks, db.err = h, blocks, err
		db.mu.Unlock()
		close(db.ready)
		if err != nil {
			close(db.stopped)
			return
		}
		db.run()
	}()
	return db
}

// open loads the blocks and replays the head.
func (db *DB) open() (*head.Head, []*block.Block, error) {
	blocks, err := db.loadBlocks()
	if err != nil {
		return nil, nil, err
	}
	hopts := db.opts.Head
	hopts.WALDir = filepath.Join(db.opts.Dir, "wal")
	if db.opts.FS == nil {
		// Mapped files need the operating system's file system; on
		// another (a test's), chunks stay in memory.
		hopts.ChunkDir = filepath.Join(db.opts.Dir, chunksHeadDir)
	}
	if hopts.Logger == nil {
		hopts.Logger = db.logger
	}
	if hopts.WAL.FS == nil {
		hopts.WAL.FS = db.fs
	}
	h, err := head.Open(hopts)
	if err != nil {
		closeBlocks(blocks)
		return nil, nil, err
	}
	if n := len(blocks); n > 0 {
		newest := blocks[n-1].Meta().MaxTime
		for _, b := range blocks {
			newest = max(newest, b.Meta().MaxTime)
		}
		if hopts.OutOfOrderWindow > 0 {
			// The head may hold late samples of ranges in blocks,
			// not in any block yet: it keeps all it replayed. What
			// a crash between a block's write and the checkpoint
			// replayed is written again and merged away.
			h.Freeze(newest+1, newest)
			h.Thaw()
		} else if st := h.Truncate(newest + 1); st.Chunks > 0 {
			// A crash after a block was written and before the WAL
			// was checkpointed replays that range into the head again.
			db.logger.Info("head data already in blocks dropped", "chunks", st.Chunks, "before", newest+1)
		}
	}
	return h, blocks, nil
}

// run compacts and applies retention every CompactionInterval until Close.
func (db *DB) run() {
	defer close(db.stopped)
	if db.opts.CompactionInterval <= 0 {
		return
	}
	t := time.NewTicker(db.opts.CompactionInterval)
	defer t.Stop()
	compactable := db.Head().Compactable()
	for {
		ready := compactable
		if err := db.Compact(); err != nil {
			db.logger.Error("compaction failed; the head keeps the data and it is retried", "err", err)
			// Retry at the next tick, not at every commit.
			ready = nil
		}
		select {
		case <-db.stop:
			return
		case <-t.C:
		case <-ready:
		}
	}
}

// Ready reports whether the store has finished opening successfully.
func (db *DB) Ready() bool {
	h, _ := db.get()
	return h != nil
}

// Wait blocks until the store has finished opening or ctx is done, and
// returns the error opening failed with, if any.
func (db *DB) Wait(ctx context.Context) error {
	select {
	case <-db.ready:
		_, err := db.get()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Head returns the head, nil until the store is ready.
func (db *DB) Head() *head.Head {
	h, _ := db.get()
	return h
}

// Blocks returns the metas of the blocks, oldest first.
func (db *DB) Blocks() []block.Meta {
	db.mu.RLock()
	defer db.mu.RUnlock()
	metas := make([]block.Meta, len(db.blocks))
	for i, b := range db.blocks {
		metas[i] = b.Meta()
	}
	return metas
}

// LowestTime returns the oldest time the store may hold a sample at: the
// oldest block's start, or the head's if there is no block;
// math.MaxInt64 while the store holds nothing or is not ready.
func (db *DB) LowestTime() int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	switch {
	case len(db.blocks) > 0:
		return min(db.blocks[0].Meta().MinTime, db.head.MinTime())
	case db.head != nil:
		return db.head.MinTime()
	}
	return math.MaxInt64
}

// Stats returns the store's counters.
func (db *DB) Stats() Stats {
	st := Stats{
		Compactions:        db.stats.compactions.Load(),
		CompactionFailures: db.stats.compactionFailures.Load(),
		CompactionTime:     time.Duration(db.stats.compactionNs.Load()),
		RetentionDeletions: db.stats.retentionDeletions.Load(),
	}
	for _, m := range db.Blocks() {
		st.Blocks++
		st.BlockBytes += m.Stats.Bytes
	}
	return st
}

func (db *DB) get() (*head.Head, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.head, db.err
}

// Appender implements storage.Appendable.
func (db *DB) Appender(ctx context.Context) storage.Appender {
	if h, _ := db.get(); h != nil {
		return h.Appender(ctx)
	}
	return notReadyAppender{}
}

// Querier implements Prometheus' storage.Queryable: the head and the
// blocks that overlap [mint, maxt], merged (see mergeQuerier). A sample in
// more than one (after a crash between writing a block and truncating the
// head, or in blocks that overlap until they are merged) is returned once.
func (db *DB) Querier(mint, maxt int64) (promstorage.Querier, error) {
	h := db.Head()
	if h == nil {
		return nil, storage.ErrNotReady
	}
	// The head first: a compaction truncates the head only after its
	// block is in the list, and waits for the head's readers that
	// started before; so either the list read next has the block, or
	// the head still has its samples for this querier.
	hq, err := h.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	var qs []promstorage.Querier
	for _, b := range db.blocksList() {
		m := b.Meta()
		if m.MaxTime < mint || m.MinTime > maxt {
			continue
		}
		q, err := b.Querier(mint, maxt)
		if errors.Is(err, block.ErrClosed) {
			// Deleted by retention since the list was read.
			continue
		}
		if err != nil {
			closeQueriers(append(qs, hq))
			return nil, err
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return hq, nil
	}
	return newMergeQuerier(append(qs, hq)), nil
}

// blocksList returns the blocks queries read.
func (db *DB) blocksList() []*block.Block {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.blocks
}

func closeQueriers(qs []promstorage.Querier) {
	for _, q := range qs {
		q.Close()
	}
}

// Metadata returns the metadata of every metric family, or of metric
// alone if it is not "". It is empty until the store is ready.
func (db *DB) Metadata(metric string) map[string]storage.Metadata {
	if h, _ := db.get(); h != nil {
		return h.Metadata(metric)
	}
	return map[string]storage.Metadata{}
}

// ExemplarQuerier implements Prometheus' storage.ExemplarQueryable.
func (db *DB) ExemplarQuerier(ctx context.Context) (promstorage.ExemplarQuerier, error) {
	if h, _ := db.get(); h != nil {
		return h.ExemplarQuerier(ctx)
	}
	return nil, storage.ErrNotReady
}

// Close stops compaction, waits for opening to finish and closes the
// store.
func (db *DB) Close() error {
	<-db.ready
	close(db.stop)
	<-db.stopped
	db.mu.Lock()
	h, blocks, err := db.head, db.blocks, db.err
	db.blocks = nil
	db.mu.Unlock()
	if h == nil {
		return err
	}
	errs := []error{closeBlocks(blocks)}
	if err := h.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close head: %w", err))
	}
	return errors.Join(errs...)
}

func closeBlocks(blocks []*block.Block) error {
	var errs []error
	for _, b := range blocks {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}

// newestTime returns the newest sample time of the head and blocks,
// math.MinInt64 if they hold none.
func newestTime(h *head.Head, blocks []*block.Block) int64 {
	t := h.MaxTime()
	for _, b := range blocks {
		t = max(t, b.Meta().MaxTime)
	}
	return t
}

type notReadyAppender struct{}

func (notReadyAppender) Append(storage.SeriesRef, labels.Labels, storage.Sample) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}
func (notReadyAppender) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}
func (notReadyAppender) SetMetadata(string, storage.Metadata) error { return storage.ErrNotReady }
func (notReadyAppender) Commit() error                              { return storage.ErrNotReady }
func (notReadyAppender) Rollback() error                            { return nil }
