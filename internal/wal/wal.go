package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
)

// Options configure a WAL.
type Options struct {
	// SegmentSize is the size past which the WAL starts a new segment: a
	// Log whose records would take the current segment beyond it goes to a
	// new segment instead. 0 means the default.
	SegmentSize int64
	// Logger receives warnings. nil discards them.
	Logger *slog.Logger
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
// dir, opts and logger are immutable after Open; bytesWritten is atomic.
// mu guards the rest, and is held across each Log's writes, so the records
// of concurrent Log calls never interleave. Sync does not hold mu while it
// fsyncs (see segment).
type WAL struct {
	dir          string
	opts         Options
	logger       *slog.Logger
	bytesWritten atomic.Int64

	mu  sync.Mutex
	seg *segment // the segment being appended to
	buf []byte   // frames being built for one write; reused across Log calls
	// dirty says seg's file holds bytes past seg.size, left by a failed
	// write that could not be cut off; they are cut off before the next
	// write, which must not follow them.
	dirty  bool
	closed bool
}

// Open opens the log in dir for appending, creating dir if needed. It
// appends to a new segment numbered after the last one on disk, so it never
// appends after an earlier process' torn tail. Before that, it repairs the
// newest non-empty segment as Replay does, so a torn tail left by a crash
// does not become corruption in the middle of the log; this reads that
// segment once. Call Replay before Open to recover the log's contents.
func Open(dir string, opts Options) (*WAL, error) {
	switch {
	case opts.SegmentSize == 0:
		opts.SegmentSize = defaultSegmentSize
	case opts.SegmentSize < 0:
		return nil, fmt.Errorf("open WAL: negative segment size %d", opts.SegmentSize)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	next := 0
	if len(segs) > 0 {
		next = segs[len(segs)-1].num + 1
		if last := lastNonEmpty(segs); last >= 0 {
			r := segmentReader{bufSize: readBufferFor(segs[last].size)}
			if err := r.check(dir, segs[last].num, true, opts.Logger, nil); err != nil {
				return nil, fmt.Errorf("open WAL: %w", err)
			}
		}
	}
	seg, err := createSegment(dir, next)
	if err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	return &WAL{dir: dir, opts: opts, logger: opts.Logger, seg: seg}, nil
}

// Dir returns the directory of the log.
func (w *WAL) Dir() string { return w.dir }

// BytesWritten returns the number of bytes, frames included, that this WAL
// has written since Open.
func (w *WAL) BytesWritten() int64 { return w.bytesWritten.Load() }

// Segments returns the numbers of the first and last segment on disk, or
// -1, -1 if there are none.
func (w *WAL) Segments() (first, last int, err error) {
	segs, err := listSegments(w.dir)
	if err != nil {
		return -1, -1, fmt.Errorf("list WAL segments: %w", err)
	}
	if len(segs) == 0 {
		return -1, -1, nil
	}
	return segs[0].num, segs[len(segs)-1].num, nil
}

// Log appends recs to the log, in order, and returns once they have been
// written to the operating system. The WAL does not retain recs.
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
func (w *WAL) Log(recs ...[]byte) error {
	total := 0
	for i, rec := range recs {
		if len(rec) == 0 {
			return fmt.Errorf("log WAL record %d of %d: %w", i+1, len(recs), ErrEmptyRecord)
		}
		if uint64(len(rec)) > math.MaxUint32 {
			return fmt.Errorf("log WAL record %d of %d: %w: %d bytes", i+1, len(recs), ErrRecordTooLarge, len(rec))
		}
		total += headerSize + len(rec)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("log WAL records: %w", ErrClosed)
	}
	if err := w.cleanLocked(); err != nil {
		return err
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
			return err
		}
	}
	// Only a batch larger than a segment still needs splitting: fill
	// segments record by record.
	for _, rec := range recs {
		used := w.seg.size + int64(len(buf))
		if used > 0 && used+headerSize+int64(len(rec)) > w.opts.SegmentSize {
			if err := w.writeLocked(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if err := w.rotateLocked(); err != nil {
				return err
			}
		}
		buf = appendFrame(buf, rec)
	}
	return w.writeLocked(buf)
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
	next, err := createSegment(w.dir, old.num+1)
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

// Sync fsyncs the current segment, making every record logged before the
// call durable: earlier segments were fsynced when the log rotated.
func (w *WAL) Sync() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("sync WAL: %w", ErrClosed)
	}
	s := w.seg
	w.mu.Unlock()
	return s.sync()
}

// Close fsyncs and closes the current segment. Every later call to Log,
// Sync or Close returns an error wrapping ErrClosed.
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
