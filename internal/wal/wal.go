package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/vfs"
)

// Options configure a WAL.
type Options struct {
	// SegmentSize is the size past which the WAL starts a new segment: a
	// Log whose records would take the current segment beyond it goes to a
	// new segment instead. 0 means the default.
	SegmentSize int64
	// Sync says when Log returns; see SyncPolicy. The zero value is
	// SyncNever.
	Sync SyncPolicy
	// Logger receives warnings. nil discards them.
	Logger *slog.Logger
	// FS is the file system the log lives in. nil means the operating
	// system's.
	FS vfs.FS
}

// defaultSegmentSize is 128 MiB. Each rotation costs an fsync of the
// finished segment and of the directory, which this makes rare (once every
// ~2 minutes at 1 MB/s of samples). The other way, segments are the unit in
// which the log is later checkpointed and deleted, and Open reads the whole
// newest segment to repair its tail, so they must not be much larger.
const defaultSegmentSize = 128 << 20

// maxRetainedBuffer bounds the frame buffer a WAL keeps between Log calls.
// A commit of a few thousand samples or series takes well under 1 MiB, so
// the usual batch reuses the buffer; a rare huge batch does not pin its
// memory after it is written.
const maxRetainedBuffer = 4 << 20

// DefaultOptions returns the options Open uses for zero fields.
func DefaultOptions() Options {
	return Options{SegmentSize: defaultSegmentSize}
}

// WAL appends records to the newest segment of a log directory. Its methods
// are safe for concurrent use.
//
// dir, opts, fs and logger are immutable after Open; bytesWritten is
// atomic; commit has its own lock. mu guards the rest, and is held across
// each Log's writes, so the records of concurrent Log calls never
// interleave. No fsync of the current segment holds mu (see segment and
// groupCommit): Log calls keep writing while one runs. Fsyncs of a
// finished segment, when the log moves to the next, do hold it.
type WAL struct {
	dir          string
	opts         Options
	fs           vfs.FS
	logger       *slog.Logger
	bytesWritten atomic.Int64
	commit       groupCommit

	mu  sync.Mutex
	seg *segment // the segment being appended to
	buf []byte   // frames being built for one write; reused across Log calls
	// written is the number of writes so far: the sequence number of the
	// last one, for groupCommit.
	written uint64
	// dirty says seg's file holds bytes past seg.size, left by a failed
	// write that could not be cut off; they are cut off before the next
	// write, which must not follow them.
	dirty  bool
	closed bool
}

// Open opens the log in dir for appending, creating dir if needed. It
// appends to a new segment numbered after the last one on disk, so it never
// appends after an earlier process' torn tail. Before that, it repairs the
// newest non-empty segment as Replay does, cutting a torn tail off with a
// warning, so the log on disk stays clean even if nobody replays it; this
// reads that segment once. Call Replay before Open to recover the log's
// contents.
func Open(dir string, opts Options) (*WAL, error) {
	switch {
	case opts.SegmentSize == 0:
		opts.SegmentSize = defaultSegmentSize
	case opts.SegmentSize < 0:
		return nil, fmt.Errorf("open WAL: negative segment size %d", opts.SegmentSize)
	}
	switch opts.Sync {
	case SyncNever, SyncAlways:
	default:
		return nil, fmt.Errorf("open WAL: unknown sync policy %d", int(opts.Sync))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	fsys := vfs.Or(opts.FS)
	if err := fsys.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	next := 0
	if len(segs) > 0 {
		next = segs[len(segs)-1].num + 1
		if last := lastNonEmpty(segs); last >= 0 {
			r := segmentReader{bufSize: readBufferFor(segs[last].size)}
			if _, err := r.read(fsys, dir, segs[last].num, opts.Logger, nil); err != nil {
				return nil, fmt.Errorf("open WAL: %w", err)
			}
		}
	}
	seg, err := createSegment(fsys, dir, next)
	if err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	w := &WAL{dir: dir, opts: opts, fs: fsys, logger: opts.Logger, seg: seg}
	w.commit.cond.L = &w.commit.mu
	return w, nil
}

// Dir returns the directory of the log.
func (w *WAL) Dir() string { return w.dir }

// BytesWritten returns the number of bytes, frames included, that this WAL
// has written since Open.
func (w *WAL) BytesWritten() int64 { return w.bytesWritten.Load() }

// Segments returns the numbers of the first and last segment on disk, or
// -1, -1 if there are none.
func (w *WAL) Segments() (first, last int, err error) {
	segs, err := listSegments(vfs.Or(w.fs), w.dir)
	if err != nil {
		return -1, -1, fmt.Errorf("list WAL segments: %w", err)
	}
	if len(segs) == 0 {
		return -1, -1, nil
	}
	return segs[0].num, segs[len(segs)-1].num, nil
}

// Log appends recs to the log, in order, and returns once they have been
// written to the operating system or, with SyncAlways, fsynced. The WAL
// does not retain recs.
//
// The records of one call go to one segment in one write whenever they fit
// in a segment; only a call that carries more than SegmentSize bytes is
// split across segments. A record larger than SegmentSize is allowed and
// gets a segment of its own.
//
// Empty records are rejected with ErrEmptyRecord before anything is written.
// If a write fails, Log returns the error and cuts off whatever part of the
// failing write reached the file, so the log ends as before the call (for a
// split call, as after its last whole write); a later call tries again.
// If the fsync fails (SyncAlways), the records were written and may or may
// not survive a power loss; every later fsync of the segment fails too.
func (w *WAL) Log(recs ...[]byte) error {
	seq, err := w.write(recs)
	if err != nil || seq == 0 || w.opts.Sync != SyncAlways {
		return err
	}
	if err := w.commit.waitDurable(seq, w.syncSnapshot); err != nil {
		return fmt.Errorf("log WAL records: %w", err)
	}
	return nil
}

// write writes recs to the log and returns the sequence number of the last
// write, or 0 if there were no records.
func (w *WAL) write(recs [][]byte) (uint64, error) {
	total := 0
	for i, rec := range recs {
		if len(rec) == 0 {
			return 0, fmt.Errorf("log WAL record %d of %d: %w", i+1, len(recs), ErrEmptyRecord)
		}
		if uint64(len(rec)) > math.MaxUint32 {
			return 0, fmt.Errorf("log WAL record %d of %d: %w: %d bytes", i+1, len(recs), ErrRecordTooLarge, len(rec))
		}
		total += headerSize + len(rec)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("log WAL records: %w", ErrClosed)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if err := w.cleanLocked(); err != nil {
		return 0, err
	}

	buf := w.buf[:0]
	if cap(buf) < total {
		buf = make([]byte, 0, total)
	}
	defer func() {
		if cap(buf) <= maxRetainedBuffer {
			w.buf = buf[:0]
		}
	}()
	// A batch that fits in a segment but not in what is left of this one
	// starts a new segment, so that it goes out in one write.
	if s := w.seg.size; s > 0 && s+int64(total) > w.opts.SegmentSize && int64(total) <= w.opts.SegmentSize {
		if err := w.rotateLocked(); err != nil {
			return 0, err
		}
	}
	// Only a batch larger than a segment still needs splitting: fill
	// segments record by record.
	for _, rec := range recs {
		used := w.seg.size + int64(len(buf))
		if used > 0 && used+headerSize+int64(len(rec)) > w.opts.SegmentSize {
			if err := w.writeLocked(buf); err != nil {
				return 0, err
			}
			buf = buf[:0]
			if err := w.rotateLocked(); err != nil {
				return 0, err
			}
		}
		buf = appendFrame(buf, rec)
	}
	if err := w.writeLocked(buf); err != nil {
		return 0, err
	}
	return w.written, nil
}

// writeLocked writes buf at the end of the current segment. On failure it
// cuts the segment back to its length before the write.
func (w *WAL) writeLocked(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	s := w.seg
	// WriteAt (pwrite) rather than Write: the position of a write never
	// depends on the file offset a failed write left behind.
	n, err := s.f.WriteAt(buf, s.size)
	if err == nil {
		s.size += int64(n)
		w.written++
		w.bytesWritten.Add(int64(n))
		return nil
	}
	err = fmt.Errorf("write WAL segment %d: %w", s.num, err)
	if terr := s.f.Truncate(s.size); terr != nil {
		w.dirty = true
		err = errors.Join(err, fmt.Errorf("cut off partial write: %w", terr))
	}
	return err
}

// cleanLocked cuts off what a failed write left behind, if an earlier
// attempt to do so failed.
func (w *WAL) cleanLocked() error {
	if !w.dirty {
		return nil
	}
	if err := w.seg.f.Truncate(w.seg.size); err != nil {
		return fmt.Errorf("WAL segment %d ends in a partial write that cannot be cut off: %w", w.seg.num, err)
	}
	w.dirty = false
	return nil
}

// rotateLocked fsyncs the current segment and moves on to a new one. If it
// fails, the current segment stays current and the next Log tries again.
func (w *WAL) rotateLocked() error {
	old := w.seg
	if err := old.sync(); err != nil {
		return err
	}
	// Everything written so far is in old or older segments, all fsynced.
	w.commit.markSynced(w.written)
	next, err := createSegment(w.fs, w.dir, old.num+1)
	if err != nil {
		return err
	}
	w.seg = next
	if err := old.close(); err != nil {
		// Its contents were fsynced above; closing cannot lose them.
		w.logger.Warn("closing finished WAL segment", "segment", old.num, "err", err)
	}
	return nil
}

// Sync makes every record logged before the call durable, fsyncing the
// current segment unless an fsync that started after the last write has
// done so already (earlier segments were fsynced when the log moved past
// them). It shares fsyncs with concurrent Log and Sync calls as SyncAlways
// describes, and does not hold up Log calls meanwhile.
func (w *WAL) Sync() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("sync WAL: %w", ErrClosed)
	}
	seq := w.written
	w.mu.Unlock()
	return w.commit.waitDurable(seq, w.syncSnapshot)
}

// syncSnapshot returns the number of the last write and the segment being
// written, for a group commit's fsync.
func (w *WAL) syncSnapshot() (uint64, *segment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written, w.seg
}

// NextSegment fsyncs the current segment and moves the log on to a new,
// empty one, returning its number. Every record of every Log call that
// returned before NextSegment was called is in a segment numbered below
// the result, and those segments are durable and will not change: a
// checkpoint can cover them, and Truncate delete them once it is written.
// If the current segment is still empty, it is the new one: NextSegment
// returns its number and creates no other.
func (w *WAL) NextSegment() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("next WAL segment: %w", ErrClosed)
	}
	if err := w.cleanLocked(); err != nil {
		return 0, fmt.Errorf("next WAL segment: %w", err)
	}
	if w.seg.size > 0 {
		if err := w.rotateLocked(); err != nil {
			return 0, fmt.Errorf("next WAL segment: %w", err)
		}
	}
	return w.seg.num, nil
}

// Truncate deletes the segments numbered below before, oldest first, but
// never the segment being written, and fsyncs the directory. It stops at
// the first segment it cannot delete, so the segments left are still
// consecutive. Deleting segments that are not covered by a checkpoint
// loses their records.
func (w *WAL) Truncate(before int) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("truncate WAL: %w", ErrClosed)
	}
	// The current segment only ever moves up, so deleting below the one
	// seen here is safe even if the log moves on meanwhile.
	before = min(before, w.seg.num)
	w.mu.Unlock()

	segs, err := listSegments(w.fs, w.dir)
	if err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	removed := 0
	for _, s := range segs {
		if s.num >= before {
			break
		}
		err = w.fs.Remove(filepath.Join(w.dir, segmentName(s.num)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("truncate WAL: remove segment %d: %w", s.num, err)
			break
		}
		err = nil
		removed++
	}
	if removed > 0 {
		if serr := vfs.SyncDir(w.fs, w.dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("truncate WAL: fsync directory: %w", serr))
		}
	}
	return err
}

// Close fsyncs and closes the current segment. Every later call to Log,
// Sync, NextSegment, Truncate or Close returns an error wrapping ErrClosed.
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("close WAL: %w", ErrClosed)
	}
	w.closed = true
	err := w.cleanLocked()
	return errors.Join(err, w.seg.close())
}
