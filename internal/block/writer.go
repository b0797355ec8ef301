package block

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/vfs"
)

// tmpSuffix marks a block directory being written. Open of a data
// directory removes such directories: a crash left them half-written.
const tmpSuffix = ".tmp"

// WriterOptions says what a Writer writes.
type WriterOptions struct {
	// MinTime and MaxTime are the block's range, inclusive: chunks
	// reaching outside it are clipped to it.
	MinTime, MaxTime int64
	// Level and Sources go to meta.json: 1 and nil for a block written
	// from the head.
	Level   int
	Sources []ulid.ULID
	// SegmentSize is the size at which chunk segment files are cut; 0
	// means DefaultSegmentSize.
	SegmentSize int64
	// FS is where the block is written; nil means the operating
	// system's.
	FS vfs.FS
}

// Writer writes one block into a directory: AddSeries for each series, in
// label order, then Finish, or Abort. The block is written under a
// temporary name and renamed into place by Finish once every file is
// fsynced, so a crash leaves either no block or a complete one. A Writer
// is used by one goroutine.
type Writer struct {
	opts   WriterOptions
	parent string
	meta   Meta
	tmp    string

	fs        vfs.FS
	chunks    *chunkWriter
	indexFile vfs.File
	indexBuf  *bufio.Writer
	index     *index.Writer

	metas   []index.ChunkMeta
	starts  []chunkenc.StartTime
	pending []chunkenc.Meta
	dense   chunkenc.Densifier
	emit    func(chunkenc.Meta, bool) error // write, bound once
	last    labels.Labels
	err     error
}

// NewWriter starts a block in directory parent.
func NewWriter(parent string, opts WriterOptions) (*Writer, error) {
	if opts.MinTime > opts.MaxTime {
		return nil, fmt.Errorf("block range [%d, %d] is empty", opts.MinTime, opts.MaxTime)
	}
	if opts.Level == 0 {
		opts.Level = 1
	}
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	id, err := ulid.New(ulid.Timestamp(time.Now()), rand.Reader)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		opts:   opts,
		fs:     vfs.Or(opts.FS),
		parent: parent,
		tmp:    filepath.Join(parent, id.String()+tmpSuffix),
		meta: Meta{
			ULID: id, MinTime: opts.MinTime, MaxTime: opts.MaxTime,
			Level: opts.Level, Sources: opts.Sources, Version: metaVersion,
		},
	}
	w.emit = w.write
	if len(w.meta.Sources) == 0 {
		w.meta.Sources = []ulid.ULID{id}
	}
	if err := w.fs.MkdirAll(w.tmp, 0o777); err != nil {
		return nil, err
	}
	if w.chunks, err = newChunkWriter(w.fs, filepath.Join(w.tmp, chunksDirname), opts.SegmentSize); err != nil {
		w.Abort()
		return nil, err
	}
	if w.indexFile, err = w.fs.OpenFile(filepath.Join(w.tmp, indexFilename), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666); err != nil {
		w.Abort()
		return nil, err
	}
	w.indexBuf = bufio.NewWriterSize(w.indexFile, 1<<20)
	w.index = index.NewWriter(w.indexBuf)
	return w, nil
}

// ULID returns the ULID of the block being written.
func (w *Writer) ULID() ulid.ULID { return w.meta.ULID }

// AddSeries adds a series with its chunks, oldest first and not
// overlapping, and the changes of its start time (see chunkenc.StartAt),
// of which the block keeps those its samples need. Series must come in
// strictly increasing label order. Chunk bytes are written before
// AddSeries returns; the caller may reuse them and starts. The Writer
// keeps lset (label sets are immutable) until the next call. A series
// without chunks in the block's range is left out.
func (w *Writer) AddSeries(lset labels.Labels, chunks []chunkenc.Meta, starts []chunkenc.StartTime) error {
	if w.err != nil {
		return w.err
	}
	if w.meta.Stats.Series > 0 && labels.Compare(lset, w.last) <= 0 {
		return fmt.Errorf("series %s added after %s", lset, w.last)
	}
	w.metas, w.pending = w.metas[:0], w.pending[:0]
	for _, c := range chunks {
		if c.MaxT < w.opts.MinTime || c.MinT > w.opts.MaxTime {
			continue
		}
		if len(c.Data) < 2 {
			return fmt.Errorf("series %s: chunk of %d bytes holds no sample count", lset, len(c.Data))
		}
		if c.MinT < w.opts.MinTime || c.MaxT > w.opts.MaxTime {
			// Only chunks from before the head cut them at block
			// ranges straddle one.
			clipped, err := chunkenc.Clip(c, w.opts.MinTime, w.opts.MaxTime)
			if err != nil {
				return fmt.Errorf("series %s: %w", lset, err)
			}
			w.pending = append(w.pending, clipped...)
			continue
		}
		w.pending = append(w.pending, c)
	}
	if len(w.pending) == 0 {
		return nil
	}
	// The head writes XOR chunks for fast appends; a block is written
	// once and read many times, so its float chunks are joined and take
	// the decimal encoding where that is smaller.
	if err := w.dense.Join(w.pending, 0, w.emit); err != nil {
		return err
	}
	if len(starts) > 0 {
		w.starts = chunkenc.ClipStarts(w.starts[:0], starts, w.metas[0].MinT, w.metas[len(w.metas)-1].MaxT)
	} else {
		w.starts = w.starts[:0]
	}
	if err := w.index.AddSeries(lset, w.metas, w.starts); err != nil {
		w.err = err
		return err
	}
	w.last = lset
	w.meta.Stats.Series++
	return nil
}

// write writes one chunk, fresh or not: it is copied into the file.
func (w *Writer) write(c chunkenc.Meta, _ bool) error {
	ref, err := w.chunks.write(c.Enc, c.Data)
	if err != nil {
		w.err = err
		return err
	}
	w.metas = append(w.metas, index.ChunkMeta{Ref: ref, MinT: c.MinT, MaxT: c.MaxT})
	w.meta.Stats.Chunks++
	// Every encoding starts with its sample count.
	w.meta.Stats.Samples += uint64(binary.BigEndian.Uint16(c.Data))
	return nil
}

// Finish completes the block and moves it into place, returning its meta.
// A block without series is not written: Finish returns its meta with
// Stats.Series 0 and leaves nothing behind.
func (w *Writer) Finish() (Meta, error) {
	if w.err != nil {
		w.Abort()
		return Meta{}, w.err
	}
	if w.meta.Stats.Series == 0 {
		w.Abort()
		return w.meta, nil
	}
	err := w.chunks.close()
	if err == nil {
		err = w.index.Close()
	}
	if err == nil {
		err = w.indexBuf.Flush()
	}
	if err == nil {
		err = w.indexFile.Sync()
	}
	if cerr := w.indexFile.Close(); err == nil {
		err = cerr
	}
	w.indexFile = nil
	if err == nil {
		err = writeMeta(w.fs, w.tmp, w.meta)
	}
	if err == nil {
		err = vfs.SyncDir(w.fs, filepath.Join(w.tmp, chunksDirname))
	}
	if err == nil {
		err = vfs.SyncDir(w.fs, w.tmp)
	}
	dir := filepath.Join(w.parent, w.meta.ULID.String())
	if err == nil {
		err = w.fs.Rename(w.tmp, dir)
	}
	if err == nil {
		err = vfs.SyncDir(w.fs, w.parent)
	}
	if err != nil {
		w.Abort()
		return Meta{}, fmt.Errorf("write block %s: %w", w.meta.ULID, err)
	}
	return w.meta, nil
}

// Abort removes what was written.
func (w *Writer) Abort() {
	if w.chunks != nil {
		w.chunks.abort()
	}
	if w.indexFile != nil {
		w.indexFile.Close()
		w.indexFile = nil
	}
	w.fs.RemoveAll(w.tmp)
}
