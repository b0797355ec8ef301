package record

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// maxDecompressed bounds what a Compressed record may expand to, so that
// a damaged one cannot ask for all memory: far above any record written
// (a checkpoint cuts its records at about 1 MiB).
const maxDecompressed = 1 << 30

// Compressor turns records into Compressed records. Its zero value is
// ready to use; it is not safe for concurrent use.
type Compressor struct {
	enc *zstd.Encoder
	buf []byte
}

// Compress returns rec as a Compressed record if that is smaller, and
// otherwise rec itself. The result is valid until the next call.
func (c *Compressor) Compress(rec []byte) []byte {
	if c.enc == nil {
		// Records are cut at about 1 MiB: a longer window finds nothing
		// more, and the encoder's buffers shrink from 12 to 5 MiB with it
		// and the lower-memory option. Only invalid options make
		// NewWriter fail.
		c.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	}
	c.buf = c.enc.EncodeAll(rec, append(c.buf[:0], byte(Compressed)))
	if len(c.buf) >= len(rec) {
		return rec
	}
	return c.buf
}

// Decompress returns the record a Compressed record holds, valid until
// the next call. A Compressed record inside one is reported as corrupt.
func (d *Decoder) Decompress(rec []byte) ([]byte, error) {
	if Kind(rec) != Compressed {
		return nil, fmt.Errorf("%w: %s record, want %s", ErrCorrupt, Kind(rec), Compressed)
	}
	if d.zstd == nil {
		var err error
		if d.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed)); err != nil {
			return nil, err
		}
	}
	out, err := d.zstd.DecodeAll(rec[1:], d.unzipped[:0])
	if err != nil {
		return nil, fmt.Errorf("%w: compressed record: %v", ErrCorrupt, err)
	}
	d.unzipped = out
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("%w: a compressed record that holds none", ErrCorrupt)
	case Kind(out) == Compressed:
		return nil, fmt.Errorf("%w: a compressed record inside a compressed record", ErrCorrupt)
	}
	return out, nil
}
