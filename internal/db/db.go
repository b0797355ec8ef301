// Package db is the store as the server sees it: today the head and its
// WAL, later the head and the persisted blocks. It opens in the background
// so that the server can answer health probes while the WAL replays.
package db

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/storage"
)

// Options configures a DB.
type Options struct {
	// Dir is the data directory; the WAL is in Dir/wal.
	Dir  string
	Head head.Options // WALDir is set from Dir
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultOptions returns the options strata runs with unless told
// otherwise.
func DefaultOptions() Options {
	return Options{Dir: "data", Head: head.DefaultOptions()}
}

// DB is the store. Until it is ready, appenders fail with
// storage.ErrNotReady and queriers return it.
//
// head is nil until the replay is done and is not changed after that; mu
// guards it and err.
type DB struct {
	ready chan struct{}

	mu   sync.RWMutex
	head *head.Head
	err  error
}

// Open starts opening the store in dir in the background and returns at
// once. Ready and Wait tell when it is done.
func Open(opts Options) *DB {
	db := &DB{ready: make(chan struct{})}
	hopts := opts.Head
	hopts.WALDir = filepath.Join(opts.Dir, "wal")
	if hopts.Logger == nil {
		hopts.Logger = opts.Logger
	}
	go func() {
		h, err := head.Open(hopts)
		db.mu.Lock()
		db.head, db.err = h, err
		db.mu.Unlock()
		close(db.ready)
	}()
	return db
}

// Ready reports whether the store has finished opening successfully.
func (db *DB) Ready() bool {
	h, _ := db.get()
	return h != nil
}

// Wait blocks until the store has finished opening or ctx is done, and
// returns the error opening failed with, if any.
func (db *DB) Wait(ctx context.Context) error {
	select {
	case <-db.ready:
		_, err := db.get()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Head returns the head, nil until the store is ready.
func (db *DB) Head() *head.Head {
	h, _ := db.get()
	return h
}

func (db *DB) get() (*head.Head, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.head, db.err
}

// Appender implements storage.Appendable.
func (db *DB) Appender(ctx context.Context) storage.Appender {
	if h, _ := db.get(); h != nil {
		return h.Appender(ctx)
	}
	return notReadyAppender{}
}

// Querier implements Prometheus' storage.Queryable.
func (db *DB) Querier(mint, maxt int64) (promstorage.Querier, error) {
	if h, _ := db.get(); h != nil {
		return h.Querier(mint, maxt)
	}
	return nil, storage.ErrNotReady
}

// Metadata returns the metadata of every metric family, or of metric
// alone if it is not "". It is empty until the store is ready.
func (db *DB) Metadata(metric string) map[string]storage.Metadata {
	if h, _ := db.get(); h != nil {
		return h.Metadata(metric)
	}
	return map[string]storage.Metadata{}
}

// ExemplarQuerier implements Prometheus' storage.ExemplarQueryable.
func (db *DB) ExemplarQuerier(ctx context.Context) (promstorage.ExemplarQuerier, error) {
	if h, _ := db.get(); h != nil {
		return h.ExemplarQuerier(ctx)
	}
	return nil, storage.ErrNotReady
}

// Close waits for opening to finish and closes the store.
func (db *DB) Close() error {
	<-db.ready
	h, err := db.get()
	if h == nil {
		return err
	}
	if err := h.Close(); err != nil {
		return fmt.Errorf("close head: %w", err)
	}
	return nil
}

type notReadyAppender struct{}

func (notReadyAppender) Append(storage.SeriesRef, labels.Labels, storage.Sample) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}
func (notReadyAppender) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}
func (notReadyAppender) SetMetadata(string, storage.Metadata) error { return storage.ErrNotReady }
func (notReadyAppender) Commit() error                              { return storage.ErrNotReady }
func (notReadyAppender) Rollback() error                            { return nil }
