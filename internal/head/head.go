// Package head is the in-memory part of the store: the series written
// recently, their compressed chunks and the inverted index over their
// labels, kept durable by a write-ahead log that is replayed on open.
package head

import (
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/tombstones"
	"github.com/strata-db/strata/internal/wal"
)

// Options configures a Head.
type Options struct {
	// WALDir is where the write-ahead log lives.
	WALDir string
	// WAL configures the log.
	WAL wal.Options
	// ChunkDir, if set, is where closed chunks are kept in files, read
	// through mappings, instead of in memory (see chunkArena). Open
	// empties it: what it holds is in the WAL.
	ChunkDir string
	// ChunkSamples is how many samples a chunk holds before a new one is
	// cut: 240, an hour at a 15s interval. Each closed chunk is a
	// trailer in the arena and a read in every checkpoint; when the head
	// still kept a list of 24-byte entries a series, at 120 the lists
	// were the largest part of the heap at a million series before a
	// block was cut (157 bytes a series), and at 240 the mean RSS per
	// series of that load was 12% lower. An open chunk's memory does
	// not depend on it (see minPartSamples), closed chunks are decimal
	// chunks, which decode at 2-4 ns a sample, and blocks join chunks to
	// 480 samples anyway; what the longer chunk costs is decoding up to
	// twice as many XOR samples of an open chunk before a short window
	// at its end.
	ChunkSamples int
	// BlockRange is the time range in milliseconds of the blocks the head
	// is compacted into: no chunk spans a multiple of it, so that a block
	// takes whole chunks. 0 lets chunks span any time.
	BlockRange int64
	// Stripes is the number of lock stripes of the series map, a power of
	// two. More stripes mean fewer appenders waiting on one another at the
	// cost of a map header per stripe.
	Stripes int
	// MaxExemplars is how many exemplars the head keeps, the newest of all
	// series together; 0 keeps none. Each takes about 100 bytes.
	MaxExemplars int
	// OutOfOrderWindow is how far (ms) behind the head's newest sample a
	// sample older than its series' newest may be and still be taken;
	// 0 refuses every such sample (storage.ErrOutOfOrderSample). See
	// late.go.
	OutOfOrderWindow int64
	// MaxSeries is the most series the head creates from appends; 0 means
	// no limit. Replay is not limited: what was acknowledged is restored.
	MaxSeries int
	// ReplayWorkers is how many goroutines apply samples during replay;
	// 0 means one per CPU (GOMAXPROCS).
	ReplayWorkers int
	// CheckpointMinBytes is how much must be written to the WAL after a
	// checkpoint before the next one is written, which bounds the WAL
	// replay reads after the last checkpoint. The next one also waits
	// until the WAL has grown by twice the size of the last delta
	// checkpoint, so that checkpoints never rewrite more than the WAL
	// takes in (see maybeCheckpoint); a full checkpoint follows deltas
	// that add up to the last full one, so replay reads at most about
	// twice what the head holds.
	CheckpointMinBytes int64
	// CheckpointOnClose writes a checkpoint on Close, so that the next
	// Open reads compact chunks instead of replaying the WAL.
	CheckpointOnClose bool
	// Logger receives replay progress and problems; nil discards.
	Logger *slog.Logger
}

// DefaultBlockRange is two hours, Prometheus' block range: long enough
// that a block holds a chunk of 120 samples at a 60s interval, short
// enough that the head holds little more than two hours of data.
const DefaultBlockRange = 2 * 60 * 60 * 1000

// DefaultOptions returns the options strata runs with unless told
// otherwise.
func DefaultOptions() Options {
	return Options{
		WAL:                wal.DefaultOptions(),
		ChunkSamples:       240,
		BlockRange:         DefaultBlockRange,
		Stripes:            4096,
		CheckpointMinBytes: 32 << 20,
		// Prometheus' default for --storage.exemplars.max-exemplars.
		MaxExemplars:      100_000,
		CheckpointOnClose: true,
	}
}

// Head holds the in-memory series. It is safe for concurrent use.
type Head struct {
	opts   Options
	logger *slog.Logger
	wal    *wal.WAL

	series    *stripeSeries
	index     *index.MemPostings
	arena     *chunkArena
	metadata  metadataStore
	exemplars *exemplarStore
	// appenders holds idle appenders with their buffers, so that a steady
	// stream of batches allocates nothing for them once the buffers have
	// grown to the usual batch size. It is a bounded free list rather than
	// a sync.Pool, which every other collection empties: growing the
	// buffers anew after each cost remote-write's BenchmarkWrite 0.9 of
	// the 2.3-2.7 bytes it allocated per sample.
	appenders chan *appender
	// lastRef is the highest series ref handed out.
	lastRef atomic.Uint64
	// stones are the samples deleted from series (see Delete), never
	// nil; a querier reads those stored when it reads a series. deleteMu
	// is held by what changes them.
	stones   atomic.Pointer[tombstones.Stones]
	deleteMu sync.Mutex
	// creating is held from handing out a series' ref to indexing it, so
	// that refs reach the index's postings in order and are appended:
	// two appenders creating series at once added them out of order, and
	// each insertion below the end copied the whole list (the list of
	// all series, and of each label value the series share): 3 GB
	// allocated in 20 s while 100k series were created over OTLP.
	creating sync.Mutex
	// appendFloor is the oldest timestamp the head takes in order:
	// Truncate and Freeze raise it past a range written to a block.
	// Older samples are late, taken only within the out-of-order window,
	// and not in frozen: the range being written to a block while Freeze
	// holds it, nil after Thaw. appendFloor is math.MinInt64 until the
	// first compaction.
	appendFloor atomic.Int64
	frozen      atomic.Pointer[timeRange]
	// mint and maxt bound the timestamps of the head's samples:
	// math.MaxInt64 and math.MinInt64 while it has none. mint may be
	// lower than the oldest sample left after a truncation, never higher.
	mint, maxt atomic.Int64
	// appenderGens counts the appenders in flight, for Truncate.
	appenderGens appenderGens
	// compactable gets a value when a commit leaves the head spanning more
	// than one and a half block ranges; see Compactable.
	compactable chan struct{}
	// readers tracks who reads chunk bytes, for the arena to know when a
	// block it empties can be freed.
	readers readers

	// commitMu is held shared by a commit from logging to applying its
	// samples, and exclusively by a checkpoint while it starts a new WAL
	// segment: then every record in earlier segments is in memory.
	commitMu sync.RWMutex
	// checkpointMu lets one checkpoint run at a time.
	checkpointMu sync.Mutex
	// checkpointWALBytes is the WAL's BytesWritten when the last
	// checkpoint started. checkpointSize is the bytes of the last full
	// checkpoint's records before compression, as the WAL's records are
	// not compressed either; deltaBytes those of the deltas since, and
	// lastDeltaBytes those of the last delta: what the next would
	// rewrite.
	checkpointWALBytes atomic.Int64
	checkpointSize     atomic.Int64
	deltaBytes         atomic.Int64
	lastDeltaBytes     atomic.Int64
	checkpointRunning  atomic.Bool
	background         sync.WaitGroup
	// marks learns what changed since the last checkpoint, for the next
	// delta. fullNext makes the next checkpoint a full one: after Open,
	// a truncation or a failed checkpoint. exemplarMark is how many
	// exemplars the head had stored when the last checkpoint read them;
	// checkpointMu guards it.
	marks        *deltaMarks
	fullNext     atomic.Bool
	exemplarMark uint64
	// compressor compresses checkpoint records: series repeat each
	// other's label names and values. Kept across checkpoints, as its
	// buffers take 5 MiB; checkpointMu guards it.
	compressor record.Compressor

	stats stats
}

// stats are counters for the server's own metrics.
type stats struct {
	series           atomic.Int64
	samplesAppended  atomic.Uint64
	samplesRejected  atomic.Uint64
	samplesDropped   atomic.Uint64
	samplesLate      atomic.Uint64
	replayedSamples  atomic.Uint64
	replayedHeld     atomic.Uint64
	replayedRecords  atomic.Uint64
	replayDurationNs atomic.Int64
}

// Stats is a point-in-time copy of the head's counters.
type Stats struct {
	Series          int64  // series in the head
	SamplesAppended uint64 // samples committed since open, replay excluded
	SamplesRejected uint64 // samples refused by Append (out of order, duplicate timestamp)
	SamplesDropped  uint64 // samples logged but found a duplicate when applied (concurrent writers)
	SamplesLate     uint64 // of SamplesAppended, those older than their series' newest sample
	ReplayedSamples uint64
	// ReplayedHeld counts the samples replay read in the WAL that the
	// checkpoint held already.
	ReplayedHeld    uint64
	WALBytesWritten int64
	ReplayDuration  time.Duration
	ReplayedRecords uint64
	Chunks          int64 // closed chunks
	ChunkBytes      int64 // bytes of closed chunks and open chunks' spilled parts, in files or in memory
	ChunkFileBytes  int64 // of ChunkBytes, those in files (Options.ChunkDir)
	// SeriesMemBytes is the memory the head holds for its series outside
	// the Go heap (see cellPool): the series themselves
	// (SeriesCellBytes), the newest bytes of their open chunks
	// (OpenChunkBytes) and their label ids (LabelIDBytes).
	SeriesMemBytes                                int64
	SeriesCellBytes, OpenChunkBytes, LabelIDBytes int64
	// MinTime and MaxTime bound the head's samples, 0 while it has none.
	MinTime, MaxTime int64
}

// Open replays the WAL in opts.WALDir into a new head and opens the WAL for
// appending. It returns once replay is done.
func Open(opts Options) (*Head, error) {
	if opts.WALDir == "" {
		return nil, errors.New("head: no WAL directory given")
	}
	if opts.ChunkSamples <= 0 || opts.ChunkSamples > math.MaxUint16 {
		return nil, fmt.Errorf("head: chunk samples %d out of range 1..%d", opts.ChunkSamples, math.MaxUint16)
	}
	if opts.Stripes <= 0 || opts.Stripes&(opts.Stripes-1) != 0 {
		return nil, fmt.Errorf("head: stripes %d is not a power of two", opts.Stripes)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Head{
		opts:   opts,
		logger: logger,
		series: newStripeSeries(opts.Stripes),
		// Replay adds series in checkpoint order; replay sorts the lists
		// once at the end (EnsureOrder).
		index:     index.NewUnorderedMemPostings(),
		exemplars: newExemplarStore(opts.MaxExemplars),
		// Appenders in use at once are about the requests being served,
		// which the remote-write handler bounds the same way.
		appenders: make(chan *appender, 2*runtime.GOMAXPROCS(0)),
	}
	arena, err := openArena(opts.ChunkDir, logger)
	if err != nil {
		return nil, err
	}
	h.arena = arena
	h.appendFloor.Store(math.MinInt64)
	h.stones.Store(&tombstones.Stones{})
	h.marks = newDeltaMarks(deltaGroups)
	// Replay restores series without marking what a delta needs.
	h.fullNext.Store(true)
	h.compactable = make(chan struct{}, 1)
	h.mint.Store(math.MaxInt64)
	h.maxt.Store(math.MinInt64)
	if err := h.replay(); err != nil {
		h.freeMemory()
		return nil, fmt.Errorf("replay WAL: %w", err)
	}

	walOpts := opts.WAL
	if walOpts.Logger == nil {
		walOpts.Logger = logger
	}
	w, err := wal.Open(opts.WALDir, walOpts)
	if err != nil {
		h.freeMemory()
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	h.wal = w
	h.background.Add(1)
	go func() {
		defer h.background.Done()
		h.spillReplayed()
	}()
	return h, nil
}

// Close waits for a background checkpoint (and the spilling of replayed
// open chunks), writes a final one if so configured, closes the WAL and
// frees the chunks. Neither appenders nor queriers may be used after
// Close.
func (h *Head) Close() error {
	h.background.Wait()
	var err error
	if h.opts.CheckpointOnClose {
		err = h.checkpoint(true)
	}
	err = errors.Join(err, h.wal.Close())
	h.freeMemory()
	return err
}

// freeMemory returns the memory the head holds outside the Go heap to the
// system. Nobody may read a chunk or a series' labels after.
func (h *Head) freeMemory() {
	h.arena.close()
	h.series.cells.close()
	h.series.symbols.cells.close()
}

// maybeCheckpoint starts a checkpoint in the background when the WAL has
// grown enough since the last one: by CheckpointMinBytes and by twice
// what the last delta wrote. Deltas then write at most half of what the
// WAL takes in, and a full checkpoint, written once they add up to the
// last one, at most as much again: checkpoints never rewrite more than
// the WAL takes in.
func (h *Head) maybeCheckpoint() {
	grown := h.wal.BytesWritten() - h.checkpointWALBytes.Load()
	if grown < max(h.opts.CheckpointMinBytes, 2*h.lastDeltaBytes.Load()) {
		return
	}
	if !h.checkpointRunning.CompareAndSwap(false, true) {
		return
	}
	h.background.Add(1)
	go func() {
		defer h.background.Done()
		defer h.checkpointRunning.Store(false)
		if err := h.Checkpoint(); err != nil {
			h.logger.Error("checkpoint failed; the WAL keeps growing until one succeeds", "err", err)
		}
	}()
}

// Stats returns the head's counters.
func (h *Head) Stats() Stats {
	chunkBytes, fileBytes := h.arena.bytes()
	openBytes, _ := h.arena.cells.bytes()
	seriesBytes, _ := h.series.cells.bytes()
	idBytes, _ := h.series.symbols.cells.bytes()
	st := Stats{
		Series:          h.stats.series.Load(),
		SamplesAppended: h.stats.samplesAppended.Load(),
		SamplesRejected: h.stats.samplesRejected.Load(),
		SamplesDropped:  h.stats.samplesDropped.Load(),
		SamplesLate:     h.stats.samplesLate.Load(),
		ReplayedSamples: h.stats.replayedSamples.Load(),
		ReplayedHeld:    h.stats.replayedHeld.Load(),
		ReplayedRecords: h.stats.replayedRecords.Load(),
		ReplayDuration:  time.Duration(h.stats.replayDurationNs.Load()),
		WALBytesWritten: h.wal.BytesWritten(),
		Chunks:          h.arena.liveChunks(),
		ChunkBytes:      chunkBytes,
		ChunkFileBytes:  fileBytes,
		SeriesMemBytes:  seriesBytes + openBytes + idBytes,
		SeriesCellBytes: seriesBytes,
		OpenChunkBytes:  openBytes,
		LabelIDBytes:    idBytes,
	}
	if mint, maxt := h.MinTime(), h.MaxTime(); mint <= maxt {
		st.MinTime, st.MaxTime = mint, maxt
	}
	return st
}

// getOrCreate returns the series with labels lset, creating it if needed.
// A new series gets the next ref, or ref if it is not 0 (replay). It
// fails only if the head has no room for another series or its label ids
// (see cellPool.allocNumbered).
func (h *Head) getOrCreate(hash uint64, lset labels.Labels, ref storage.SeriesRef) (*memSeries, error) {
	if ref == 0 {
		h.creating.Lock()
		defer h.creating.Unlock()
	}
	s, created, err := h.series.getOrSet(hash, lset, func(s *memSeries) error {
		syms, err := h.series.symbols.intern(lset)
		if err != nil {
			return err
		}
		if ref == 0 {
			ref = storage.SeriesRef(h.lastRef.Add(1))
		}
		s.init(ref, syms)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", storage.ErrSeriesLimit, lset, err)
	}
	if created {
		h.index.Add(s.ref, func(f func(labels.Label)) { h.series.symbols.rangeLabels(h.series.symbols.idsOf(s.syms), f) })
		h.stats.series.Add(1)
	}
	return s, nil
}

// seriesLabels returns the labels of the series with ref.
func (h *Head) seriesLabels(ref storage.SeriesRef) (labels.Labels, bool) {
	if s := h.series.getByRef(ref); s != nil {
		return h.labelsOf(s), true
	}
	return labels.EmptyLabels(), false
}

// labelsOf returns the labels of s, which a reader or appender holds or
// which is in the maps.
func (h *Head) labelsOf(s *memSeries) labels.Labels {
	// A series has at most one label per byte of its ids.
	ids := h.series.symbols.idsOf(s.syms)
	b := labels.NewScratchBuilder(len(ids))
	return h.series.symbols.labels(ids, &b)
}

// validateLabels checks what a new series must satisfy: a metric name, no
// empty or duplicate label names, and names and values that are valid
// UTF-8. lset is sorted by name, so duplicates are neighbours.
func validateLabels(lset labels.Labels) error {
	if lset.Get(labels.MetricName) == "" {
		return fmt.Errorf("%w: %s has no metric name", storage.ErrInvalidLabels, lset)
	}
	prev := ""
	err := lset.Validate(func(l labels.Label) error {
		switch {
		case l.Name == "":
			return errors.New("empty label name")
		case l.Name == prev:
			return fmt.Errorf("duplicate label name %q", l.Name)
		case !utf8.ValidString(l.Name):
			return fmt.Errorf("label name %q is not valid UTF-8", l.Name)
		case !utf8.ValidString(l.Value):
			return fmt.Errorf("value of label %q is not valid UTF-8", l.Name)
		}
		prev = l.Name
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s: %w", storage.ErrInvalidLabels, lset, err)
	}
	return nil
}

// MinTime returns the oldest timestamp the head may hold, math.MaxInt64
// if it holds nothing.
func (h *Head) MinTime() int64 { return h.mint.Load() }

// MaxTime returns the newest timestamp in the head, math.MinInt64 if it
// holds nothing.
func (h *Head) MaxTime() int64 { return h.maxt.Load() }

// widenTimes extends the head's time bounds to cover [mint, maxt].
func (h *Head) widenTimes(mint, maxt int64) {
	lower(&h.mint, mint)
	raise(&h.maxt, maxt)
}

// Freeze makes the head refuse samples older than hi+1 from now on, late
// ones in [lo, hi] too until Thaw (storage.ErrOutOfBounds, or
// ErrCompacting for those the out-of-order window takes), and returns
// once no commit that took such samples is still applying them: the
// head's data in [lo, hi] no longer changes, and can be written to a
// block.
func (h *Head) Freeze(lo, hi int64) {
	h.frozen.Store(&timeRange{lo, hi})
	h.freeze(hi + 1)
}

// timeRange is a closed range of timestamps.
type timeRange struct{ lo, hi int64 }

// frozenOverlaps reports whether the range Freeze holds overlaps [mint,
// maxt].
func (h *Head) frozenOverlaps(mint, maxt int64) bool {
	r := h.frozen.Load()
	return r != nil && mint <= r.hi && maxt >= r.lo
}

// Floor returns the oldest time the head takes samples at in order:
// older ones, of ranges written to blocks, are taken only as late
// samples.
func (h *Head) Floor() int64 { return h.appendFloor.Load() }

// Thaw lets late samples of the range Freeze held in again, once it is
// truncated: they stay in the head until a compaction writes them to a
// block of their own.
func (h *Head) Thaw() { h.frozen.Store(nil) }

// freeze raises appendFloor to t and waits for the commits that checked
// it before.
func (h *Head) freeze(t int64) {
	raise(&h.appendFloor, t)
	// A commit checks the floors under commitMu, shared: taking it
	// exclusively waits for those that checked them before.
	h.commitMu.Lock()
	h.commitMu.Unlock()
}

// raise sets v to t if t is larger.
func raise(v *atomic.Int64, t int64) {
	for cur := v.Load(); t > cur && !v.CompareAndSwap(cur, t); cur = v.Load() {
	}
}

// lower sets v to t if t is smaller.
func lower(v *atomic.Int64, t int64) {
	for cur := v.Load(); t < cur && !v.CompareAndSwap(cur, t); cur = v.Load() {
	}
}

// Compactable returns a channel that gets a value when the head has come
// to span more than one and a half block ranges, so that the store
// compacts as soon as there is a range to write rather than at its next
// tick: data written faster than real time (a backfill, a benchmark)
// would otherwise pile up in memory between ticks.
func (h *Head) Compactable() <-chan struct{} { return h.compactable }

// checkCompactable signals Compactable if the head's samples since its
// floor span more than one and a half block ranges. Late samples of
// ranges before the floor do not count: the store writes them with the
// next range.
func (h *Head) checkCompactable() {
	if r := h.opts.BlockRange; r > 0 && h.maxt.Load()-max(h.mint.Load(), h.appendFloor.Load()) > r/2*3 {
		select {
		case h.compactable <- struct{}{}:
		default:
		}
	}
}

// SeriesLabels yields the labels of every series in the head, in no
// order. Series created or removed meanwhile may or may not be yielded.
func (h *Head) SeriesLabels() iter.Seq[labels.Labels] {
	return func(yield func(labels.Labels) bool) {
		// A reader of no samples: it keeps the labels of the series it
		// walks from being released.
		reader := h.acquireReader(math.MaxInt64)
		defer h.releaseReader(reader)
		var b labels.ScratchBuilder
		for s := range h.series.all() {
			if !yield(h.series.symbols.labels(h.series.symbols.idsOf(s.syms), &b)) {
				return
			}
		}
	}
}

// LabelPairs returns the number of distinct label pairs in the head.
func (h *Head) LabelPairs() int { return h.index.Stats().LabelPairs }
