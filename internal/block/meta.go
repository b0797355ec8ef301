package block

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oklog/ulid/v2"

	"github.com/strata-db/strata/internal/vfs"
)

const (
	metaFilename  = "meta.json"
	indexFilename = "index"
	chunksDirname = "chunks"
	// metaVersion is the version of the block format meta.json
	// describes; a reader refuses versions it does not know.
	metaVersion = 1
)

// Meta describes a block: meta.json, the last file written, so a block
// directory with one is complete.
type Meta struct {
	ULID ulid.ULID `json:"ulid"`
	// MinTime and MaxTime bound the block's samples, inclusive, in
	// milliseconds. A block written from the head covers one block range
	// [k*range, (k+1)*range-1].
	MinTime int64       `json:"minTime"`
	MaxTime int64       `json:"maxTime"`
	Stats   Stats       `json:"stats"`
	Level   int         `json:"level"`   // 1 for a block written from the head, +1 per compaction
	Sources []ulid.ULID `json:"sources"` // the level-1 blocks merged into this one
	Version int         `json:"version"`
}

// Stats counts what a block holds.
type Stats struct {
	Series  uint64 `json:"numSeries"`
	Samples uint64 `json:"numSamples"`
	Chunks  uint64 `json:"numChunks"`
	// Bytes is the size of the index and chunk files, filled in by Open,
	// not stored.
	Bytes int64 `json:"-"`
}

// ReadMeta reads and checks a block's meta.json.
func ReadMeta(fs Files) (Meta, error) {
	src, err := fs.Open(metaFilename)
	if err != nil {
		return Meta{}, err
	}
	defer src.Close()
	b, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, &CorruptionError{Path: metaFilename, Reason: err.Error()}
	}
	if m.Version != metaVersion {
		return Meta{}, &CorruptionError{Path: metaFilename, Reason: fmt.Sprintf("unknown version %d", m.Version)}
	}
	if m.MinTime > m.MaxTime {
		return Meta{}, &CorruptionError{Path: metaFilename, Reason: fmt.Sprintf("min time %d after max time %d", m.MinTime, m.MaxTime)}
	}
	return m, nil
}

// writeMeta writes meta.json into dir and fsyncs it.
func writeMeta(fsys vfs.FS, dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	f, err := fsys.OpenFile(filepath.Join(dir, metaFilename), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
