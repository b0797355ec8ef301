package wal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/strata-db/strata/internal/vfs"
)

// readBufferSize is the size of the reads Replay issues. 1 MiB makes
// reading a 128 MiB segment take 128 system calls, and every record up to
// this size is handed to fn in place in the read buffer, without a copy.
const readBufferSize = 1 << 20

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// From is the first segment to read. Segments numbered below it are
	// ignored: a checkpoint covers them. Replay reads the segments from
	// the first one numbered From or above, which must be consecutive.
	// If that first one is not From itself but some segment below From
	// exists, segment From is missing: the log is only ever deleted from
	// the front, so it was there once, and it is corruption. If no
	// segment below From exists, the log may simply have been truncated
	// past From, and the first segment above it is where it starts.
	From int
	// Logger receives progress, at Info once per segment (segment
	// number, bytes, records, elapsed time), and repairs, at Warn. nil
	// discards.
	Logger *slog.Logger
	// FS is the file system the log lives in. nil means the operating
	// system's.
	FS vfs.FS
}

// ReplayStats say what Replay read and repaired.
type ReplayStats struct {
	Segments int   // segments read
	Records  int64 // records fn returned nil for
	// Bytes is the size of the valid frames read, headers included: with
	// DroppedBytes, the size the segments read had.
	Bytes        int64
	DroppedBytes int64             // bytes cut off by repairs
	Repairs      []CorruptionError // one per repaired segment, in log order
}

// Replay reads every record of the segments in dir, from opts.From on, in
// log order, and calls fn for each. rec is valid only until fn returns: it
// points into a buffer Replay reuses for the next record, so fn must copy
// whatever it keeps.
//
// A torn or corrupt record in any segment is repaired rather than
// reported: Replay cuts the segment off at the end of the last good record
// before it, logs at Warn the segment, offset, bytes dropped and reason,
// notes it in the stats' Repairs, and goes on with the next segment, whose
// records are intact. The good records after a bad one in the same
// segment are lost, since where the next record starts is unknown. A torn
// tail left by a crash is the common case of this. Only a missing segment
// in the sequence is corruption, returned as a *CorruptionError before
// anything is read or repaired. I/O errors are returned wrapped. An error
// from fn stops Replay and is returned as it is. On error the stats say
// how far Replay got. A missing or empty dir holds an empty log.
//
// Replay must not run while a WAL has dir open.
func Replay(dir string, opts ReplayOptions, fn func(rec []byte) error) (ReplayStats, error) {
	var stats ReplayStats
	if opts.From < 0 {
		return stats, fmt.Errorf("replay WAL: negative start segment %d", opts.From)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fsys := vfs.Or(opts.FS)
	segs, err := listSegments(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return stats, nil
	}
	if err != nil {
		return stats, fmt.Errorf("replay WAL: %w", err)
	}
	if segs, err = segmentsFrom(segs, opts.From); err != nil {
		return stats, err
	}
	var maxSize int64
	for _, s := range segs {
		maxSize = max(maxSize, s.size)
	}
	r := segmentReader{bufSize: readBufferFor(maxSize)}
	for _, s := range segs {
		start := time.Now()
		res, err := r.read(fsys, dir, s.num, logger, fn)
		stats.Records += res.records
		stats.Bytes += res.end
		if err != nil {
			return stats, err
		}
		stats.Segments++
		if res.bad != nil {
			stats.DroppedBytes += res.size - res.end
			stats.Repairs = append(stats.Repairs, CorruptionError{Segment: s.num, Offset: res.end, Err: res.bad})
		}
		// Enabled first: the arguments would allocate even if discarded.
		if logger.Enabled(context.Background(), slog.LevelInfo) {
			logger.Info("WAL segment replayed", "segment", s.num, "bytes", res.end,
				"records", res.records, "elapsed", time.Since(start))
		}
	}
	return stats, nil
}

// segmentsFrom returns the segments of segs to replay from segment from
// on, as ReplayOptions.From describes, or a *CorruptionError for the first
// missing one.
func segmentsFrom(segs []segmentFile, from int) ([]segmentFile, error) {
	i, _ := slices.BinarySearchFunc(segs, from, func(s segmentFile, n int) int { return s.num - n })
	if i > 0 && i < len(segs) && segs[i].num != from {
		return nil, &CorruptionError{Segment: from, Offset: 0, Err: errMissingSegment}
	}
	segs = segs[i:]
	for j := 1; j < len(segs); j++ {
		if want := segs[j-1].num + 1; segs[j].num != want {
			return nil, &CorruptionError{Segment: want, Offset: 0, Err: errMissingSegment}
		}
	}
	return segs, nil
}

// lastNonEmpty returns the index of the last segment that holds any bytes,
// or -1: the one whose tail Open repairs. Empty segments after it (left by
// an Open that was followed by a crash before any Log) do not make it any
// less the newest: nothing was ever appended after it, so its tail may be
// torn.
func lastNonEmpty(segs []segmentFile) int {
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].size > 0 {
			return i
		}
	}
	return -1
}

// readBufferFor returns the size of read buffer for segments of at most
// size bytes: no larger than they are, so that replaying a small log does
// not allocate a whole readBufferSize.
func readBufferFor(size int64) int {
	const minSize = 4096 // one page
	return int(min(max(size, minSize), readBufferSize))
}

// segmentReader reads segments one record at a time. Its buffers are
// reused from record to record and segment to segment.
type segmentReader struct {
	bufSize int // size of br's buffer
	br      *bufio.Reader
	big     []byte // records larger than br's buffer are read into this
}

// readResult is what segmentReader.read found in a segment.
type readResult struct {
	size    int64 // size of the segment before any repair
	end     int64 // end of the last good record read
	records int64 // records fn returned nil for
	bad     error // what was wrong with the record at end, if it was repaired
}

// read reads segment n of dir and calls fn, if not nil, for each record.
// If the segment holds a bad record, read cuts the segment off at its
// start (end), logs a warning and returns the reason as bad.
func (r *segmentReader) read(fsys vfs.FS, dir string, n int, logger *slog.Logger, fn func([]byte) error) (readResult, error) {
	var res readResult
	path := filepath.Join(dir, segmentName(n))
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return res, fmt.Errorf("open WAL segment %d: %w", n, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return res, fmt.Errorf("stat WAL segment %d: %w", n, err)
	}
	res.size = info.Size()
	var ioErr, fnErr error
	res.end, res.records, res.bad, ioErr, fnErr = r.scan(f, res.size, fn)
	switch {
	case fnErr != nil:
		return res, fnErr
	case ioErr != nil:
		return res, fmt.Errorf("read WAL segment %d at offset %d: %w", n, res.end, ioErr)
	case res.bad == nil:
		return res, nil
	}
	logger.Warn("WAL segment ends in a torn or corrupt record; truncating it",
		"segment", n, "offset", res.end, "dropped_bytes", res.size-res.end, "reason", res.bad.Error())
	return res, truncate(fsys, path, n, res.end)
}

// scan reads f, which is size bytes long, from the start, and calls fn for
// every good record; records counts those fn returned nil for. It stops at
// the end of the file, at the first bad record, which it returns as bad,
// or at an I/O error or an error from fn, returned as ioErr or fnErr. end
// is the offset at which the bad or failing record starts, or size.
func (r *segmentReader) scan(f io.Reader, size int64, fn func([]byte) error) (end, records int64, bad, ioErr, fnErr error) {
	if r.br == nil {
		r.br = bufio.NewReaderSize(f, r.bufSize)
	} else {
		r.br.Reset(f)
	}
	br := r.br
	var off int64
	for {
		h, err := br.Peek(headerSize)
		if len(h) < headerSize {
			switch {
			case err == io.EOF && len(h) == 0:
				return off, records, nil, nil, nil
			case err == io.EOF:
				return off, records, errTornHeader, nil, nil
			default:
				return off, records, nil, err, nil
			}
		}
		length, sum := parseHeader(h)
		if length == 0 {
			return off, records, errZeroLength, nil, nil
		}
		// The length is checked against the file before anything is
		// allocated for it, so a corrupt length cannot ask for 4 GiB.
		if int64(length) > size-off-headerSize {
			return off, records, fmt.Errorf("%w: length %d, %d bytes left", errTornPayload, length, size-off-headerSize), nil, nil
		}
		if _, err := br.Discard(headerSize); err != nil {
			return off, records, nil, err, nil
		}
		var rec []byte
		if int(length) <= br.Size() {
			rec, err = br.Peek(int(length))
		} else {
			if cap(r.big) < int(length) {
				r.big = make([]byte, length)
			}
			rec = r.big[:length]
			_, err = io.ReadFull(br, rec)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The file shrank after it was measured.
			return off, records, errTornPayload, nil, nil
		}
		if err != nil {
			return off, records, nil, err, nil
		}
		if got := crc32.Checksum(rec, castagnoli); got != sum {
			return off, records, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, sum, got), nil, nil
		}
		if fn != nil {
			if err := fn(rec); err != nil {
				return off, records, nil, nil, err
			}
		}
		records++
		if int(length) <= br.Size() {
			if _, err := br.Discard(int(length)); err != nil {
				return off, records, nil, err, nil
			}
		}
		off += headerSize + int64(length)
	}
}

// truncate cuts segment n at path down to size bytes and makes that durable.
func truncate(fsys vfs.FS, path string, n int, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("truncate WAL segment %d: %w", n, err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truncate WAL segment %d at offset %d: %w", n, size, err)
	}
	return nil
}
