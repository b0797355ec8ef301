package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"strconv"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
)

// chunkReader reads the chunks of a block's segment files. It is safe for
// concurrent use. The bytes it returns are slices of the segments if they
// are in memory (mapped), copies otherwise; either stays valid until
// close.
type chunkReader struct {
	segs []Source // segs[i] is segment i+1
}

// maxChunkHeader is the most bytes a chunk's length and encoding take.
const maxChunkHeader = binary.MaxVarintLen32 + 1

// openChunks opens the segment files in fs's directory dir and checks their
// headers.
func openChunks(fs Files, dir string) (*chunkReader, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	r := &chunkReader{}
	for i, name := range names {
		p := path.Join(dir, name)
		if seq, err := strconv.Atoi(name); err != nil || seq != i+1 {
			r.close()
			return nil, &CorruptionError{Path: p, Reason: fmt.Sprintf("not chunk segment %d", i+1)}
		}
		src, err := fs.Open(p)
		if err != nil {
			r.close()
			return nil, err
		}
		r.segs = append(r.segs, src)
		hdr, err := index.ReadAt(src, 0, min(chunksHeaderSize, src.Size()))
		if err != nil || len(hdr) < chunksHeaderSize || binary.BigEndian.Uint32(hdr) != chunksMagic || hdr[4] != chunksVersion {
			r.close()
			return nil, &CorruptionError{Path: p, Reason: "bad header"}
		}
	}
	return r, nil
}

// chunk returns the chunk at ref, its CRC checked.
func (r *chunkReader) chunk(ref index.ChunkRef) (chunkenc.Encoding, []byte, error) {
	seq, off := splitChunkRef(ref)
	if seq < 1 || seq > len(r.segs) {
		return 0, nil, fmt.Errorf("%w: chunk ref %#x: no segment %d", ErrCorrupt, ref, seq)
	}
	src := r.segs[seq-1]
	if off < chunksHeaderSize || off >= src.Size() {
		return 0, nil, fmt.Errorf("%w: chunk ref %#x: offset outside segment %d", ErrCorrupt, ref, seq)
	}
	hdr, err := index.ReadAt(src, off, min(maxChunkHeader, src.Size()-off))
	if err != nil {
		return 0, nil, err
	}
	n, k := binary.Uvarint(hdr)
	if k <= 0 || n > uint64(src.Size()) || off+int64(k)+1+int64(n)+4 > src.Size() {
		return 0, nil, fmt.Errorf("%w: chunk ref %#x: bad length", ErrCorrupt, ref)
	}
	b, err := index.ReadAt(src, off+int64(k), 1+int64(n)+4)
	if err != nil {
		return 0, nil, err
	}
	encData, sum := b[:1+n], binary.BigEndian.Uint32(b[1+n:])
	if crc32.Checksum(encData, castagnoli) != sum {
		return 0, nil, fmt.Errorf("%w: chunk ref %#x: checksum mismatch", ErrCorrupt, ref)
	}
	enc, data := chunkenc.Encoding(encData[0]), encData[1:1+n:1+n]
	if _, err := chunkenc.FromData(enc, data); err != nil {
		return 0, nil, fmt.Errorf("%w: chunk ref %#x: %w", ErrCorrupt, ref, err)
	}
	return enc, data, nil
}

func (r *chunkReader) size() int64 {
	var n int64
	for _, s := range r.segs {
		n += s.Size()
	}
	return n
}

func (r *chunkReader) close() error {
	var errs []error
	for _, s := range r.segs {
		errs = append(errs, s.Close())
	}
	r.segs = nil
	return errors.Join(errs...)
}
