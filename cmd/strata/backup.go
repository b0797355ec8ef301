package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bucket"
	"github.com/strata-db/strata/internal/db"
)

type backupOptions struct {
	objstoreConfig, snapshot, createURL, dataDir string
	keepSnapshot                                 bool
}

// tsdbBackup copies a snapshot's blocks to a bucket: the snapshot named
// by --snapshot, or one a running strata makes on --snapshot.create-url,
// removed once backed up unless --snapshot.keep.
func tsdbBackup(ctx context.Context, o backupOptions, logger *slog.Logger, out io.Writer) error {
	if o.objstoreConfig == "" {
		return errors.New("--objstore.config-file is required")
	}
	if (o.snapshot == "") == (o.createURL == "") {
		return errors.New("give either --snapshot DIR or --snapshot.create-url URL")
	}
	bkt, err := bucket.Open(o.objstoreConfig, logger)
	if err != nil {
		return err
	}
	defer bkt.Close()
	dir := o.snapshot
	if o.createURL != "" {
		name, err := createSnapshot(ctx, o.createURL)
		if err != nil {
			return err
		}
		dir = filepath.Join(o.dataDir, db.SnapshotsDir, name)
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("snapshot %s made by %s is not in --data-dir %s: %w", name, o.createURL, o.dataDir, err)
		}
		logger.Info("snapshot made", "dir", dir)
		if !o.keepSnapshot {
			defer func() {
				if err := os.RemoveAll(dir); err != nil {
					logger.Warn("snapshot not removed", "dir", dir, "err", err)
				}
			}()
		}
	}
	start := time.Now()
	st, err := bucket.Backup(ctx, bkt, dir, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "backed up %s: %d blocks, %d sent (%d bytes), %d of earlier backups deleted, in %s\n",
		dir, st.Blocks, st.Uploaded, st.Bytes, st.Deleted, time.Since(start).Round(time.Millisecond))
	return nil
}

// createSnapshot asks the strata (or Prometheus) at url for a snapshot
// and returns its name.
func createSnapshot(ctx context.Context, url string) (string, error) {
	endpoint := strings.TrimSuffix(url, "/") + "/api/v1/admin/tsdb/snapshot"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return "", fmt.Errorf("--snapshot.create-url: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK || r.Status != "success" || r.Data.Name == "" {
		msg := r.Error
		if msg == "" {
			msg = strings.TrimSpace(string(body))
		}
		return "", fmt.Errorf("snapshot at %s: %s: %s (the server needs --web.enable-admin-api)", endpoint, resp.Status, msg)
	}
	if r.Data.Name != filepath.Base(r.Data.Name) {
		return "", fmt.Errorf("snapshot at %s: odd name %q", endpoint, r.Data.Name)
	}
	return r.Data.Name, nil
}

type restoreOptions struct {
	objstoreConfig, dataDir string
}

// tsdbRestore makes a data directory hold the bucket's last backup.
func tsdbRestore(ctx context.Context, o restoreOptions, logger *slog.Logger, out io.Writer) error {
	if o.objstoreConfig == "" {
		return errors.New("--objstore.config-file is required")
	}
	bkt, err := bucket.Open(o.objstoreConfig, logger)
	if err != nil {
		return err
	}
	defer bkt.Close()
	start := time.Now()
	st, err := bucket.Restore(ctx, bkt, o.dataDir, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "restored %s: %d blocks, %d fetched (%d bytes), %d not in the backup removed, in %s\n",
		o.dataDir, st.Blocks, st.Downloaded, st.Bytes, st.Removed, time.Since(start).Round(time.Millisecond))
	return nil
}
