// Package storagetest has stores for the tests of what writes to one.
package storagetest

import (
	"context"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// NotReady is a store that is still replaying its WAL: every append and
// commit fails with storage.ErrNotReady.
type NotReady struct{}

func (NotReady) Appender(context.Context) storage.Appender { return notReadyApp{} }

type notReadyApp struct{}

func (notReadyApp) Append(storage.SeriesRef, labels.Labels, storage.Sample) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}

func (notReadyApp) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}

func (notReadyApp) SetMetadata(string, storage.Metadata) error { return storage.ErrNotReady }
func (notReadyApp) Commit() error                              { return storage.ErrNotReady }
func (notReadyApp) Rollback() error                            { return nil }
