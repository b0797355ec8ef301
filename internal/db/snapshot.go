package db

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/vfs"
)

// SnapshotsDir is the directory of the data directory snapshots go to.
const SnapshotsDir = "snapshots"

// Snapshot writes a copy of the store under <Dir>/snapshots/ and returns
// its name, as Prometheus names them (20261208T031500Z-<16 hex digits>):
// every block as hard links of its files, which never change but for a
// tombstones file, replaced whole; and, unless skipHead, the head's
// samples as a block of their own. A store opened on the snapshot's
// directory answers as this one did. It waits for a compaction that runs,
// which deletes blocks.
func (db *DB) Snapshot(skipHead bool) (string, error) {
	h, err := db.get()
	if h == nil {
		return "", err
	}
	if _, ok := db.fs.(vfs.OS); !ok {
		return "", errors.New("snapshots need the operating system's file system")
	}
	var id [8]byte
	rand.Read(id[:])
	name := time.Now().UTC().Format("20060102T150405Z0700") + "-" + hex.EncodeToString(id[:])
	dir := filepath.Join(db.opts.Dir, SnapshotsDir, name)
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		os.RemoveAll(dir)
		return "", fmt.Errorf("snapshot %s: %w", name, err)
	}
	for _, b := range db.blocksList() {
		id := b.Meta().ULID.String()
		if err := linkTree(filepath.Join(db.opts.Dir, id), filepath.Join(dir, id)); err != nil {
			return fail(err)
		}
	}
	if mint, maxt := h.MinTime(), h.MaxTime(); !skipHead && mint <= maxt {
		w, err := block.NewWriter(dir, block.WriterOptions{MinTime: mint, MaxTime: maxt, FS: db.fs})
		if err != nil {
			return fail(err)
		}
		if err := h.ForEachSeries(mint, maxt, w.AddSeries); err != nil {
			w.Abort()
			return fail(err)
		}
		if _, err := w.Finish(); err != nil {
			return fail(err)
		}
	}
	if err := vfs.SyncDir(db.fs, filepath.Dir(dir)); err != nil {
		return fail(err)
	}
	db.logger.Info("snapshot written", "dir", dir, "blocks", len(db.blocksList()), "head", !skipHead)
	return name, nil
}

// linkTree makes to a copy of directory from of hard links to its files.
func linkTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o777)
		}
		return os.Link(p, filepath.Join(to, rel))
	})
}
