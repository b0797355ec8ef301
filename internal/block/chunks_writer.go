package block

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/vfs"
)

// Chunk segment files. See docs/format/chunks.md.
const (
	chunksMagic   = 0x5354434b // "STCK"
	chunksVersion = 1
	// chunksHeaderSize is the magic number, the version byte and three
	// bytes of padding, which keep the first chunk 8-byte aligned.
	chunksHeaderSize = 8
	// DefaultSegmentSize is the size at which a chunk segment file is
	// cut: 512 MiB, as in Prometheus, keeps the number of files (and
	// mappings) of a large block small while a ChunkRef's 32-bit offset
	// still reaches every byte.
	DefaultSegmentSize = 512 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chunkRef builds the reference of the chunk at off in segment seq.
func chunkRef(seq int, off int64) index.ChunkRef {
	return index.ChunkRef(uint64(seq)<<32 | uint64(off))
}

// splitChunkRef is the inverse of chunkRef.
func splitChunkRef(ref index.ChunkRef) (seq int, off int64) {
	return int(uint64(ref) >> 32), int64(uint32(ref))
}

// chunkWriter writes chunks into the segment files of a block's chunks
// directory, numbered from 1. It is used by one goroutine.
type chunkWriter struct {
	fs          vfs.FS
	dir         string
	segmentSize int64

	seq  int
	f    vfs.File
	bw   *bufio.Writer
	off  int64 // bytes written to the current segment
	buf  []byte
	size int64 // bytes written to all segments
}

func newChunkWriter(fsys vfs.FS, dir string, segmentSize int64) (*chunkWriter, error) {
	if err := fsys.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	return &chunkWriter{fs: fsys, dir: dir, segmentSize: segmentSize}, nil
}

// write appends a chunk and returns its reference.
func (w *chunkWriter) write(enc chunkenc.Encoding, data []byte) (index.ChunkRef, error) {
	w.buf = appendChunkRecord(w.buf[:0], enc, data)
	n := int64(len(w.buf))
	if w.f == nil || w.off+n > w.segmentSize && w.off > chunksHeaderSize {
		if err := w.cut(); err != nil {
			return 0, err
		}
	}
	if w.off+n > 1<<32 {
		return 0, fmt.Errorf("chunk of %d bytes does not fit a segment", len(data))
	}
	ref := chunkRef(w.seq, w.off)
	if _, err := w.bw.Write(w.buf); err != nil {
		return 0, err
	}
	w.off += n
	w.size += n
	return ref, nil
}

// appendChunkRecord appends a chunk as a segment file holds it: length,
// encoding, data, CRC.
func appendChunkRecord(dst []byte, enc chunkenc.Encoding, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(data)))
	start := len(dst)
	dst = append(dst, byte(enc))
	dst = append(dst, data...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// chunksHeader returns the header every segment file starts with.
func chunksHeader() []byte {
	return append(binary.BigEndian.AppendUint32(nil, chunksMagic), chunksVersion, 0, 0, 0)
}

// cut finishes the current segment and starts the next.
func (w *chunkWriter) cut() error {
	if err := w.finishSegment(); err != nil {
		return err
	}
	w.seq++
	f, err := w.fs.OpenFile(filepath.Join(w.dir, segmentName(w.seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	w.f = f
	if w.bw == nil {
		// 1 MiB writes keep the system calls per chunk negligible.
		w.bw = bufio.NewWriterSize(f, 1<<20)
	} else {
		w.bw.Reset(f)
	}
	if _, err := w.bw.Write(chunksHeader()); err != nil {
		return err
	}
	w.off = chunksHeaderSize
	w.size += chunksHeaderSize
	return nil
}

// finishSegment flushes and fsyncs the current segment, if any.
func (w *chunkWriter) finishSegment() error {
	if w.f == nil {
		return nil
	}
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}

// close finishes the last segment.
func (w *chunkWriter) close() error { return w.finishSegment() }

// abort closes the current segment without finishing it; the caller
// removes the directory.
func (w *chunkWriter) abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

func segmentName(seq int) string { return fmt.Sprintf("%06d", seq) }
