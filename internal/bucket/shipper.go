package bucket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/vfs"
)

// recordFilename is the Shipper's record of what is uploaded, in the
// data directory.
const recordFilename = "shipper.json"

// ShipperOptions configures a Shipper.
type ShipperOptions struct {
	// Dir is the data directory: blocks in Dir/<ULID>, the record in
	// Dir/shipper.json.
	Dir string
	// FS is Dir's file system; nil means the operating system's.
	FS     vfs.FS
	Bucket objstore.Bucket
	// ExternalLabels go into the uploaded meta.json's thanos section.
	ExternalLabels labels.Labels
	// Blocks returns the store's blocks, oldest first.
	Blocks func() []block.Meta
	// Interval is how often Run looks for blocks to upload without being
	// told of one by Notify; failures are retried sooner (RetryMin,
	// doubling up to RetryMax).
	Interval, RetryMin, RetryMax time.Duration
	Logger                       *slog.Logger
	// Registerer takes the Shipper's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// DefaultShipperOptions returns the intervals a node runs with.
func DefaultShipperOptions() ShipperOptions {
	return ShipperOptions{
		// Notify starts an upload as soon as a block is written; the
		// interval only picks up what that missed, such as blocks
		// present at start.
		Interval: time.Minute,
		// A bucket that fails is asked again within seconds, and one
		// that stays down no more than every five minutes, the pace
		// of Thanos' sidecar (it retries at its 30 s sync).
		RetryMin: 5 * time.Second,
		RetryMax: 5 * time.Minute,
	}
}

// Shipper uploads the store's blocks to a bucket (see the package
// documentation for which and how). It is safe for concurrent use: mu
// guards uploaded, which Shipped reads while Sync changes it; syncMu lets
// one Sync run at a time.
type Shipper struct {
	opts     ShipperOptions
	fs       vfs.FS
	logger   *slog.Logger
	external map[string]string
	notify   chan struct{}
	metrics  shipperMetrics

	syncMu sync.Mutex

	mu sync.Mutex
	// uploaded holds the ULIDs of the level-1 blocks whose samples are
	// in the bucket, as sources of an uploaded block.
	uploaded map[ulid.ULID]struct{}
}

// NewShipper returns a Shipper that has read its record.
func NewShipper(opts ShipperOptions) *Shipper {
	s := &Shipper{
		opts:     opts,
		fs:       vfs.Or(opts.FS),
		logger:   opts.Logger,
		external: opts.ExternalLabels.Map(),
		notify:   make(chan struct{}, 1),
		metrics:  newShipperMetrics(opts.Registerer),
		uploaded: map[ulid.ULID]struct{}{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	ids, err := s.readRecord()
	if err != nil {
		s.logger.Warn("record of uploaded blocks unreadable; each block is looked for in the bucket before it is uploaded", "file", recordFilename, "err", err)
	}
	for _, id := range ids {
		s.uploaded[id] = struct{}{}
	}
	return s
}

// Shipped reports whether a block's samples are all in the bucket: every
// one of its sources is in an uploaded block.
func (s *Shipper) Shipped(m block.Meta) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shipped(m)
}

func (s *Shipper) shipped(m block.Meta) bool {
	if len(m.Sources) == 0 {
		_, ok := s.uploaded[m.ULID]
		return ok
	}
	for _, id := range m.Sources {
		if _, ok := s.uploaded[id]; !ok {
			return false
		}
	}
	return true
}

// Notify tells Run that a block was written; it does not wait.
func (s *Shipper) Notify() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Run uploads blocks until ctx is done: at once, then whenever Notify is
// called and every Interval, and after a failure again after a backoff.
// An upload cut short by ctx leaves nothing a reader takes for a block.
func (s *Shipper) Run(ctx context.Context) {
	var backoff time.Duration
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
		case <-t.C:
		}
		wait := s.opts.Interval
		if err := s.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, s.opts.RetryMin), s.opts.RetryMax)
			wait = backoff
			s.logger.Warn("upload to object storage failed; retrying", "err", err, "retry_in", backoff)
		} else {
			backoff = 0
		}
		t.Reset(wait)
	}
}

// Sync uploads, oldest first, every block of the store not shipped yet,
// and stops at the first failure.
func (s *Shipper) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	blocks := s.opts.Blocks()
	defer func() { s.metrics.pending.Set(float64(s.pending(blocks))) }()
	changed := false
	defer func() {
		if changed {
			s.prune(blocks)
			if err := s.writeRecord(); err != nil {
				s.logger.Warn("record of uploaded blocks not written; it is rebuilt from the bucket", "err", err)
			}
		}
	}()
	for _, m := range blocks {
		if s.Shipped(m) {
			continue
		}
		done, err := s.inBucket(ctx, m.ULID)
		if err != nil {
			s.metrics.failures.Inc()
			return err
		}
		if !done {
			if err := s.upload(ctx, m); err != nil {
				s.metrics.failures.Inc()
				if errors.Is(err, fs.ErrNotExist) && !slices.ContainsFunc(s.opts.Blocks(), func(o block.Meta) bool { return o.ULID == m.ULID }) {
					// Retention or a merge took it meanwhile.
					continue
				}
				return fmt.Errorf("upload block %s: %w", m.ULID, err)
			}
		}
		s.mu.Lock()
		for _, id := range append(slices.Clone(m.Sources), m.ULID) {
			s.uploaded[id] = struct{}{}
		}
		s.mu.Unlock()
		changed = true
	}
	return nil
}

// pending counts the blocks not shipped.
func (s *Shipper) pending(blocks []block.Meta) int {
	n := 0
	for _, m := range blocks {
		if !s.Shipped(m) {
			n++
		}
	}
	return n
}

// prune forgets uploaded blocks that no block of the store holds any
// more, so the record stays the size of the data directory.
func (s *Shipper) prune(blocks []block.Meta) {
	keep := map[ulid.ULID]bool{}
	for _, m := range blocks {
		keep[m.ULID] = true
		for _, id := range m.Sources {
			keep[id] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.uploaded {
		if !keep[id] {
			delete(s.uploaded, id)
		}
	}
}

// inBucket reports whether a block's meta.json is in the bucket.
func (s *Shipper) inBucket(ctx context.Context, id ulid.ULID) (bool, error) {
	ok, err := s.opts.Bucket.Exists(ctx, path.Join(id.String(), metaFilename))
	if err != nil {
		return false, fmt.Errorf("look for block %s in the bucket: %w", id, err)
	}
	return ok, nil
}

// upload sends a block of the data directory to the bucket.
func (s *Shipper) upload(ctx context.Context, m block.Meta) error {
	start := time.Now()
	sent, err := uploadBlock(ctx, s.opts.Bucket, s.fs, filepath.Join(s.opts.Dir, m.ULID.String()), m, s.external, s.logger)
	if err != nil {
		return err
	}
	s.metrics.uploads.Inc()
	s.metrics.bytes.Add(float64(sent))
	lag := time.Since(ulid.Time(m.ULID.Time()))
	s.metrics.lag.Observe(lag.Seconds())
	s.logger.Info("block uploaded", "ulid", m.ULID, "level", m.Level, "min_time", m.MinTime, "max_time", m.MaxTime,
		"bytes", sent, "duration", time.Since(start), "since_written", lag)
	return nil
}

// record is shipper.json.
type record struct {
	Version  int         `json:"version"`
	Uploaded []ulid.ULID `json:"uploaded"`
}

const recordVersion = 1

func (s *Shipper) readRecord() ([]ulid.ULID, error) {
	f, err := s.fs.OpenFile(filepath.Join(s.opts.Dir, recordFilename), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return nil, err
	}
	if r.Version != recordVersion {
		return nil, fmt.Errorf("unknown version %d", r.Version)
	}
	return r.Uploaded, nil
}

// writeRecord replaces shipper.json: a temporary file, fsynced, renamed
// over it, the directory fsynced.
func (s *Shipper) writeRecord() error {
	s.mu.Lock()
	r := record{Version: recordVersion}
	for id := range s.uploaded {
		r.Uploaded = append(r.Uploaded, id)
	}
	s.mu.Unlock()
	slices.SortFunc(r.Uploaded, ulid.ULID.Compare)
	b, err := json.MarshalIndent(r, "", "\t")
	if err != nil {
		return err
	}
	name := filepath.Join(s.opts.Dir, recordFilename)
	tmp := name + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, name); err != nil {
		return err
	}
	return vfs.SyncDir(s.fs, s.opts.Dir)
}
