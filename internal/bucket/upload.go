package bucket

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/vfs"
)

// uploadBlock sends the block in directory dir of fsys to the bucket,
// its files and then its meta.json with external as its labels, and
// returns the bytes sent. If it fails, it removes what it sent,
// meta.json first, as far as the bucket lets it.
func uploadBlock(ctx context.Context, bkt objstore.Bucket, fsys vfs.FS, dir string, m block.Meta, external map[string]string, logger *slog.Logger) (sent int64, err error) {
	files, err := blockFiles(fsys, dir, "")
	if err != nil {
		return 0, err
	}
	var names []string
	defer func() {
		if err == nil {
			return
		}
		// A new context: ctx may be why it failed.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range slices.Backward(names) {
			if derr := bkt.Delete(cctx, name); derr != nil && !bkt.IsObjNotFoundErr(derr) {
				logger.Debug("partial upload not removed", "object", name, "err", derr)
			}
		}
	}()
	for _, f := range files {
		name := path.Join(m.ULID.String(), f.RelPath)
		names = append(names, name)
		if err := uploadFile(ctx, bkt, fsys, name, filepath.Join(dir, filepath.FromSlash(f.RelPath)), f.SizeBytes); err != nil {
			return 0, err
		}
		sent += f.SizeBytes
	}
	meta, err := encodeMeta(m, external, files)
	if err != nil {
		return 0, err
	}
	name := path.Join(m.ULID.String(), metaFilename)
	names = append(names, name)
	if err := bkt.Upload(ctx, name, bytes.NewReader(meta)); err != nil {
		return 0, fmt.Errorf("upload %s: %w", name, err)
	}
	return sent + int64(len(meta)), nil
}

// uploadFile uploads one local file of size bytes.
func uploadFile(ctx context.Context, bkt objstore.Bucket, fsys vfs.FS, name, local string, size int64) error {
	f, err := fsys.OpenFile(local, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// A LimitedReader tells objstore the size, so S3 uploads it in one
	// request or exact parts rather than buffering to find out.
	r := &io.LimitedReader{R: io.NewSectionReader(f, 0, size), N: size}
	if err := bkt.Upload(ctx, name, r); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}

// blockFiles lists the files below dir/rel but meta.json, sorted, with
// their sizes.
func blockFiles(fsys vfs.FS, dir, rel string) ([]File, error) {
	entries, err := fsys.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range entries {
		name := path.Join(rel, e.Name())
		if e.IsDir() {
			sub, err := blockFiles(fsys, dir, name)
			if err != nil {
				return nil, err
			}
			files = append(files, sub...)
			continue
		}
		if name == metaFilename {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		files = append(files, File{RelPath: name, SizeBytes: info.Size()})
	}
	return files, nil
}
