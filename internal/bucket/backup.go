package bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/tombstones"
	"github.com/strata-db/strata/internal/vfs"
)

// ManifestName is the object naming the blocks of the last complete
// backup in a bucket, and their files.
const ManifestName = "backup.json"

// manifest is backup.json.
type manifest struct {
	Version int           `json:"version"`
	Time    time.Time     `json:"time"`
	Blocks  []backupBlock `json:"blocks"`
}

type backupBlock struct {
	ULID  ulid.ULID    `json:"ulid"`
	Files []backupFile `json:"files"`
}

// backupFile is a file of a block, by its slash-separated path in the
// block's directory. A block's index and chunks never change under its
// ULID, so their size tells whether a copy holds them; its meta.json and
// tombstones file (replaced when series are deleted) carry a SHA-256 too.
type backupFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

func hashed(name string) bool { return name == metaFilename || name == tombstones.Filename }

// BackupStats is what a backup did.
type BackupStats struct {
	Blocks   int   // in the backup
	Uploaded int   // of those, blocks sent whole or in part
	Deleted  int   // blocks of earlier backups removed from the bucket
	Bytes    int64 // sent
}

// Backup makes the bucket a copy of the blocks in dir, a snapshot's
// directory: it sends the files of each block that the bucket's last
// backup does not hold as they are (meta.json last), then writes
// backup.json with the new list of blocks, then deletes the blocks of
// earlier backups that are not in it. A backup cut short leaves the last
// complete one in place, and the next one sends only what is missing.
func Backup(ctx context.Context, bkt objstore.Bucket, dir string, logger *slog.Logger) (BackupStats, error) {
	var st BackupStats
	blocks, err := localBlocks(dir)
	if err != nil {
		return st, err
	}
	if len(blocks) == 0 {
		return st, fmt.Errorf("no blocks in %s", dir)
	}
	prev, err := readManifest(ctx, bkt)
	if err != nil && !errors.Is(err, errNoBackup) {
		return st, err
	}
	held := map[ulid.ULID][]backupFile{}
	if prev != nil {
		for _, b := range prev.Blocks {
			held[b.ULID] = b.Files
		}
	}
	l, err := listBucket(ctx, bkt)
	if err != nil {
		return st, err
	}
	for _, b := range blocks {
		id := b.ULID.String()
		var send []backupFile
		for _, f := range b.Files {
			if !slices.Contains(held[b.ULID], f) {
				send = append(send, f)
			}
		}
		if len(send) == 0 {
			continue
		}
		// meta.json last: a block in the bucket without one is partial.
		slices.SortStableFunc(send, func(a, b backupFile) int { return boolCmp(a.Name == metaFilename, b.Name == metaFilename) })
		for _, f := range send {
			if err := uploadFile(ctx, bkt, vfs.OS{}, path.Join(id, f.Name), filepath.Join(dir, id, filepath.FromSlash(f.Name)), f.Size); err != nil {
				return st, err
			}
			st.Bytes += f.Size
		}
		// A file the block no longer has (none so far, but a tombstones
		// file could go) goes from the copy too.
		for _, name := range l.objects[b.ULID] {
			rel := strings.TrimPrefix(name, id+"/")
			if !slices.ContainsFunc(b.Files, func(f backupFile) bool { return f.Name == rel }) {
				if err := bkt.Delete(ctx, name); err != nil && !bkt.IsObjNotFoundErr(err) {
					return st, fmt.Errorf("delete %s: %w", name, err)
				}
			}
		}
		st.Uploaded++
		logger.Info("block backed up", "ulid", id, "files", len(send))
	}
	next, err := json.MarshalIndent(manifest{Version: 1, Time: time.Now().UTC(), Blocks: blocks}, "", "\t")
	if err != nil {
		return st, err
	}
	if err := bkt.Upload(ctx, ManifestName, bytes.NewReader(next)); err != nil {
		return st, fmt.Errorf("upload %s: %w", ManifestName, err)
	}
	st.Blocks = len(blocks)
	for id, objects := range l.objects {
		if slices.ContainsFunc(blocks, func(b backupBlock) bool { return b.ULID == id }) {
			continue
		}
		// meta.json first, so that what is left reads as partial.
		slices.SortStableFunc(objects, func(a, b string) int {
			return boolCmp(path.Base(b) == metaFilename, path.Base(a) == metaFilename)
		})
		for _, name := range objects {
			if err := bkt.Delete(ctx, name); err != nil && !bkt.IsObjNotFoundErr(err) {
				return st, fmt.Errorf("delete %s: %w", name, err)
			}
		}
		st.Deleted++
		logger.Info("block of an earlier backup deleted", "ulid", id)
	}
	return st, nil
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// RestoreStats is what a restore did.
type RestoreStats struct {
	Blocks     int   // in the backup
	Downloaded int   // of those, blocks fetched
	Removed    int   // blocks of the directory not in the backup
	Bytes      int64 // fetched
}

// restoreSuffix marks a block directory being fetched; the store does not
// load it, and the next restore removes it.
const restoreSuffix = ".restore-tmp"

// Restore makes the data directory dir hold the blocks of the bucket's
// last complete backup, and nothing else: it fetches each block that dir
// does not hold whole into a directory of its own, checks its sizes and
// hashes, syncs it and renames it into place, then removes the blocks of
// dir that the backup lacks. dir must not hold a write-ahead log: its
// samples are not in the backup, and a server may be using it.
func Restore(ctx context.Context, bkt objstore.BucketReader, dir string, logger *slog.Logger) (RestoreStats, error) {
	var st RestoreStats
	m, err := readManifest(ctx, bkt)
	if err != nil {
		return st, err
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "wal")); err == nil && len(entries) > 0 {
		return st, fmt.Errorf("%s holds a write-ahead log, whose samples are not in the backup: restore into a data directory no server uses (or remove its wal directory)", dir)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return st, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return st, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), restoreSuffix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return st, err
			}
		}
	}
	have, err := localBlocks(dir)
	if err != nil {
		return st, err
	}
	for _, b := range m.Blocks {
		if slices.ContainsFunc(have, func(h backupBlock) bool { return h.ULID == b.ULID && slices.Equal(h.Files, b.Files) }) {
			continue
		}
		n, err := fetchBlock(ctx, bkt, dir, b)
		st.Bytes += n
		if err != nil {
			return st, fmt.Errorf("block %s: %w", b.ULID, err)
		}
		st.Downloaded++
		logger.Info("block restored", "ulid", b.ULID, "bytes", n)
	}
	st.Blocks = len(m.Blocks)
	for _, h := range have {
		if slices.ContainsFunc(m.Blocks, func(b backupBlock) bool { return b.ULID == h.ULID }) {
			continue
		}
		// Renamed first, so that a crash does not leave half a block
		// that the store would try to load.
		bdir := filepath.Join(dir, h.ULID.String())
		if err := os.Rename(bdir, bdir+restoreSuffix); err != nil {
			return st, err
		}
		if err := os.RemoveAll(bdir + restoreSuffix); err != nil {
			return st, err
		}
		st.Removed++
		logger.Info("block not in the backup removed", "ulid", h.ULID)
	}
	return st, vfs.SyncDir(vfs.OS{}, dir)
}

// fetchBlock downloads block b into dir and returns the bytes fetched.
func fetchBlock(ctx context.Context, bkt objstore.BucketReader, dir string, b backupBlock) (int64, error) {
	final := filepath.Join(dir, b.ULID.String())
	tmp := final + restoreSuffix
	var n int64
	for _, f := range b.Files {
		local := filepath.Join(tmp, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(local), 0o777); err != nil {
			return n, err
		}
		got, err := fetchFile(ctx, bkt, path.Join(b.ULID.String(), f.Name), local)
		n += got.Size
		if err != nil {
			return n, err
		}
		if got.Size != f.Size || (f.SHA256 != "" && got.SHA256 != f.SHA256) {
			return n, fmt.Errorf("%s in the bucket is not the file backed up: %d bytes, want %d (or its SHA-256 differs)", f.Name, got.Size, f.Size)
		}
	}
	err := filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return vfs.SyncDir(vfs.OS{}, p)
	})
	if err != nil {
		return n, err
	}
	if err := os.RemoveAll(final); err != nil {
		return n, err
	}
	return n, os.Rename(tmp, final)
}

// fetchFile copies an object to a new file at local, synced, and returns
// its size and SHA-256.
func fetchFile(ctx context.Context, bkt objstore.BucketReader, name, local string) (backupFile, error) {
	r, err := bkt.Get(ctx, name)
	if err != nil {
		return backupFile{}, fmt.Errorf("get %s: %w", name, err)
	}
	defer r.Close()
	f, err := os.Create(local)
	if err != nil {
		return backupFile{}, err
	}
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return backupFile{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

var errNoBackup = errors.New("no backup in the bucket (no " + ManifestName + ")")

func readManifest(ctx context.Context, bkt objstore.BucketReader) (*manifest, error) {
	b, err := readObject(ctx, bkt, ManifestName)
	if bkt.IsObjNotFoundErr(err) {
		return nil, errNoBackup
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("%s: version %d, want 1", ManifestName, m.Version)
	}
	return &m, nil
}

// localBlocks lists the blocks of dir, those directories named by a ULID
// that have a meta.json, with their files sorted by name.
func localBlocks(dir string) ([]backupBlock, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var blocks []backupBlock
	for _, e := range entries {
		id, err := ulid.ParseStrict(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		bdir := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(bdir, metaFilename)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		files, err := blockFiles(vfs.OS{}, bdir, "")
		if err != nil {
			return nil, err
		}
		files = append(files, File{RelPath: metaFilename})
		b := backupBlock{ULID: id}
		for _, f := range files {
			bf := backupFile{Name: f.RelPath}
			if bf, err = describe(filepath.Join(bdir, filepath.FromSlash(f.RelPath)), bf); err != nil {
				return nil, err
			}
			b.Files = append(b.Files, bf)
		}
		slices.SortFunc(b.Files, func(a, b backupFile) int { return strings.Compare(a.Name, b.Name) })
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// describe fills in f's size and, for a file that may change, its hash.
func describe(local string, f backupFile) (backupFile, error) {
	info, err := os.Stat(local)
	if err != nil {
		return f, err
	}
	f.Size = info.Size()
	if !hashed(f.Name) {
		return f, nil
	}
	b, err := os.ReadFile(local)
	if err != nil {
		return f, err
	}
	sum := sha256.Sum256(b)
	f.SHA256 = hex.EncodeToString(sum[:])
	return f, nil
}
