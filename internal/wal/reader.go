package wal

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// readBufferSize is the size of the reads Replay issues. 1 MiB makes
// reading a 128 MiB segment take 128 system calls, and every record up to
// this size is handed to fn in place in the read buffer, without a copy.
const readBufferSize = 1 << 20

// Replay reads every record of every segment in dir, in log order, and calls
// fn for each. rec is valid only until fn returns: it points into a buffer
// Replay reuses for the next record, so fn must copy whatever it keeps.
//
// A torn or corrupt record at the tail of the newest non-empty segment is
// the clean end of the log: Replay truncates that segment after its last
// good record and logs, at Warn level, the segment, the offset and the
// number of bytes dropped. A bad record anywhere else, or a segment missing
// between two present ones, returns a *CorruptionError. An error from fn
// stops Replay and is returned wrapped with the segment and offset of the
// record (errors.Is and errors.As see through the wrapping). A missing or
// empty dir holds an empty log.
//
// Replay must not run while a WAL has dir open.
func Replay(dir string, logger *slog.Logger, fn func(rec []byte) error) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	segs, err := listSegments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay WAL: %w", err)
	}
	for i := 1; i < len(segs); i++ {
		if want := segs[i-1].num + 1; segs[i].num != want {
			return &CorruptionError{Segment: want, Offset: 0, Err: errMissingSegment}
		}
	}
	last := lastNonEmpty(segs)
	if last < 0 {
		return nil
	}
	var maxSize int64
	for _, s := range segs[:last+1] {
		maxSize = max(maxSize, s.size)
	}
	r := segmentReader{bufSize: readBufferFor(maxSize)}
	for i, s := range segs[:last+1] {
		if err := r.check(dir, s.num, i == last, logger, fn); err != nil {
			return err
		}
	}
	return nil
}

// lastNonEmpty returns the index of the last segment that holds any bytes,
// or -1. Empty segments after it (left by an Open that was followed by a
// crash before any Log) do not make it any less the newest: nothing was
// ever appended after it, so its tail may be torn.
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

// check reads segment n of dir and calls fn, if not nil, for each record.
// If the segment ends in a bad record and tail is true, it truncates the
// segment at that record and logs a warning; if tail is false, it returns
// a *CorruptionError.
func (r *segmentReader) check(dir string, n int, tail bool, logger *slog.Logger, fn func([]byte) error) error {
	path := filepath.Join(dir, segmentName(n))
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open WAL segment %d: %w", n, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat WAL segment %d: %w", n, err)
	}
	size := info.Size()
	end, bad, err := r.scan(f, size, fn)
	if err != nil {
		return fmt.Errorf("WAL segment %d at offset %d: %w", n, end, err)
	}
	if bad == nil {
		return nil
	}
	if !tail {
		return &CorruptionError{Segment: n, Offset: end, Err: bad}
	}
	logger.Warn("WAL ends in a torn or corrupt record; truncating it",
		"segment", n, "offset", end, "dropped_bytes", size-end, "reason", bad.Error())
	return truncate(path, n, end)
}

// scan reads f, which is size bytes long, from the start, and calls fn for
// every good record. It stops at the end of the file, at the first bad
// record, which it returns as bad, or at an I/O error or an error from fn,
// returned as err. end is the offset at which the bad or failing record
// starts, or size.
func (r *segmentReader) scan(f *os.File, size int64, fn func([]byte) error) (end int64, bad, err error) {
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
				return off, nil, nil
			case err == io.EOF:
				return off, errTornHeader, nil
			default:
				return off, nil, err
			}
		}
		length, sum := parseHeader(h)
		if length == 0 {
			return off, errZeroLength, nil
		}
		// The length is checked against the file before anything is
		// allocated for it, so a corrupt length cannot ask for 4 GiB.
		if int64(length) > size-off-headerSize {
			return off, fmt.Errorf("%w: length %d, %d bytes left", errTornPayload, length, size-off-headerSize), nil
		}
		if _, err := br.Discard(headerSize); err != nil {
			return off, nil, err
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
			return off, errTornPayload, nil
		}
		if err != nil {
			return off, nil, err
		}
		if got := crc32.Checksum(rec, castagnoli); got != sum {
			return off, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, sum, got), nil
		}
		if fn != nil {
			if err := fn(rec); err != nil {
				return off, nil, err
			}
		}
		if int(length) <= br.Size() {
			if _, err := br.Discard(int(length)); err != nil {
				return off, nil, err
			}
		}
		off += headerSize + int64(length)
	}
}

// truncate cuts segment n at path down to size bytes and makes that durable.
func truncate(path string, n int, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
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
