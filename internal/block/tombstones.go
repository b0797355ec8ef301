package block

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/tombstones"
	"github.com/strata-db/strata/internal/vfs"
)

// readTombstones reads the block's tombstones file, if it has one.
func readTombstones(files Files) (tombstones.Stones, error) {
	src, err := files.Open(tombstones.Filename)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b := make([]byte, src.Size())
	if _, err := src.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	s, err := tombstones.Decode(b)
	if err != nil {
		return nil, &CorruptionError{Path: tombstones.Filename, Reason: err.Error()}
	}
	return s, nil
}

// Tombstones returns the samples deleted from the block's series, which
// its queriers skip, by series ref; nil if none are. It must not be
// changed.
func (b *Block) Tombstones() tombstones.Stones {
	return *b.stones.Load()
}

// Delete marks the samples in [mint, maxt] of the series that match ms
// as deleted, and returns how many series it marked. The block's
// tombstones file in dir, its directory, is written through fsys and
// made durable before queriers skip them: those opened once it returned
// do; those open already read the block as it was. Deletes of a block
// must not run concurrently.
func (b *Block) Delete(ctx context.Context, fsys vfs.FS, dir string, mint, maxt int64, ms ...*labels.Matcher) (int, error) {
	mint, maxt = max(mint, b.meta.MinTime), min(maxt, b.meta.MaxTime)
	if mint > maxt {
		return 0, nil
	}
	if err := b.acquire(); err != nil {
		return 0, err
	}
	defer b.release()
	p, err := index.PostingsForMatchers(ctx, b.index, ms...)
	if err != nil {
		return 0, err
	}
	var (
		cur    = b.Tombstones()
		add    = tombstones.Stones{}
		lb     labels.ScratchBuilder
		lset   labels.Labels
		chunks []index.ChunkMeta
	)
	for p.Next() {
		if err := b.index.Series(p.At(), &lb, &lset, &chunks, nil); err != nil {
			return 0, err
		}
		if len(chunks) == 0 {
			continue
		}
		// Only the samples there are: see head.Delete.
		lo, hi := max(mint, chunks[0].MinT), min(maxt, chunks[len(chunks)-1].MaxT)
		if lo <= hi && !cur[p.At()].Covers(lo, hi) {
			add[p.At()] = tombstones.Intervals{{Mint: lo, Maxt: hi}}
		}
	}
	if err := p.Err(); err != nil {
		return 0, err
	}
	if len(add) == 0 {
		return 0, nil
	}
	stones := cur.With(add)
	if err := writeTombstones(fsys, dir, stones); err != nil {
		return 0, err
	}
	b.stones.Store(&stones)
	return len(add), nil
}

// writeTombstones writes the tombstones file of the block in dir: under
// a temporary name, then renamed, both made durable.
func writeTombstones(fsys vfs.FS, dir string, s tombstones.Stones) error {
	name := filepath.Join(dir, tombstones.Filename)
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(tombstones.Encode(s))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil {
		err = vfs.SyncDir(fsys, dir)
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("write tombstones of block %s: %w", filepath.Base(dir), err)
	}
	return nil
}
