package head

import (
	"slices"
	"strings"
	"sync"

	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

// metadataStore holds the latest metadata of each metric family. Senders
// repeat metadata with every request or batch, so the appender checks
// against it first and logs and stores only what changed: an unchanged
// entry costs a map lookup and no allocation.
type metadataStore struct {
	mu sync.RWMutex
	m  map[string]storage.Metadata
}

func (ms *metadataStore) get(name string) (storage.Metadata, bool) {
	ms.mu.RLock()
	md, ok := ms.m[name]
	ms.mu.RUnlock()
	return md, ok
}

func (ms *metadataStore) set(entries []record.RefMetadata) {
	ms.mu.Lock()
	if ms.m == nil {
		ms.m = map[string]storage.Metadata{}
	}
	for _, e := range entries {
		ms.m[e.MetricName] = storage.Metadata{Type: e.Type, Help: e.Help, Unit: e.Unit}
	}
	ms.mu.Unlock()
}

// all returns every entry, sorted by metric name.
func (ms *metadataStore) all() []record.RefMetadata {
	ms.mu.RLock()
	out := make([]record.RefMetadata, 0, len(ms.m))
	for name, md := range ms.m {
		out = append(out, record.RefMetadata{MetricName: name, Type: md.Type, Help: md.Help, Unit: md.Unit})
	}
	ms.mu.RUnlock()
	slices.SortFunc(out, func(a, b record.RefMetadata) int { return strings.Compare(a.MetricName, b.MetricName) })
	return out
}

// Metadata returns the metadata of every metric family, or of metric alone
// if it is not "".
func (h *Head) Metadata(metric string) map[string]storage.Metadata {
	if metric != "" {
		if md, ok := h.metadata.get(metric); ok {
			return map[string]storage.Metadata{metric: md}
		}
		return map[string]storage.Metadata{}
	}
	h.metadata.mu.RLock()
	defer h.metadata.mu.RUnlock()
	out := make(map[string]storage.Metadata, len(h.metadata.m))
	for k, v := range h.metadata.m {
		out[k] = v
	}
	return out
}
