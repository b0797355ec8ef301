package head

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

// Appender returns an appender for a batch of samples. See storage.Appender
// for the contract.
func (h *Head) Appender(context.Context) storage.Appender {
	a := appenderPool.Get().(*appender)
	a.head = h
	return a
}

// appenderPool recycles appenders with their buffers, so that a steady
// stream of batches allocates nothing for them once the buffers have grown
// to the usual batch size.
var appenderPool = sync.Pool{New: func() any { return &appender{} }}

// appender buffers a batch until Commit. It is used by one goroutine.
type appender struct {
	head *Head

	// samples and series are parallel: series[i] is the series of samples[i].
	samples []record.RefSample
	series  []*memSeries
	// unlogged are series of this batch whose series record may not be in
	// the WAL yet; Commit logs those it still finds unlogged. A series may
	// be listed more than once.
	unlogged []*memSeries
	// last is the series of the previous Append, with its sample, so that
	// samples of one series sent in one batch are checked against each
	// other and not only against what is committed.
	last *memSeries

	// metadata are the changed metadata entries of this batch, their
	// strings copied.
	metadata []record.RefMetadata
	// exemplars of this batch, their labels copied.
	exemplars []record.RefExemplar

	logSeries   []record.RefSeries
	seriesBuf   []byte
	samplesBuf  []byte
	metadataBuf []byte
	exemplarBuf []byte
	recs        [4][]byte
}

func (a *appender) Append(ref storage.SeriesRef, lset labels.Labels, smpl storage.Sample) (storage.SeriesRef, error) {
	h := a.head
	var s *memSeries
	if ref != 0 {
		s = h.series.getByRef(ref)
	}
	if s == nil {
		hash := lset.Hash()
		if s = h.series.getByHash(hash, lset); s == nil {
			if err := validateLabels(lset); err != nil {
				h.stats.samplesRejected.Add(1)
				return 0, err
			}
			if limit := h.opts.MaxSeries; limit > 0 && h.stats.series.Load() >= int64(limit) {
				h.stats.samplesRejected.Add(1)
				return 0, fmt.Errorf("%w: %s would be series %d, the limit is %d", storage.ErrSeriesLimit, lset, limit+1, limit)
			}
			s, _ = h.getOrCreate(hash, lset, 0)
		}
	}
	if !s.logged.Load() && s != a.last {
		a.unlogged = append(a.unlogged, s)
	}

	var (
		dup bool
		err error
	)
	if s == a.last {
		prev := a.samples[len(a.samples)-1]
		dup, err = checkOrder(prev.T, prev.V, smpl.T, smpl.V)
	} else {
		s.mu.Lock()
		dup, err = s.appendable(smpl.T, smpl.V)
		s.mu.Unlock()
	}
	if err != nil {
		h.stats.samplesRejected.Add(1)
		return s.ref, fmt.Errorf("%w: series %s, timestamp %d", err, s.lset, smpl.T)
	}
	if dup {
		return s.ref, nil
	}
	a.samples = append(a.samples, record.RefSample{Ref: s.ref, T: smpl.T, V: smpl.V})
	a.series = append(a.series, s)
	a.last = s
	return s.ref, nil
}

// AppendExemplar implements storage.Appender.
func (a *appender) AppendExemplar(ref storage.SeriesRef, lset labels.Labels, e exemplar.Exemplar) (storage.SeriesRef, error) {
	h := a.head
	if h.opts.MaxExemplars <= 0 {
		return ref, nil
	}
	var s *memSeries
	if ref != 0 {
		s = h.series.getByRef(ref)
	}
	if s == nil {
		if s = h.series.getByHash(lset.Hash(), lset); s == nil {
			// Exemplars come with samples, which create the series.
			return 0, fmt.Errorf("%w: exemplar for series %s, which has no samples", storage.ErrInvalidLabels, lset)
		}
	}
	dup, err := h.exemplars.validate(s.ref, e)
	if err != nil {
		return s.ref, fmt.Errorf("%w: series %s, timestamp %d", err, s.lset, e.Ts)
	}
	if dup {
		return s.ref, nil
	}
	if !s.logged.Load() && s != a.last {
		a.unlogged = append(a.unlogged, s)
	}
	a.exemplars = append(a.exemplars, record.RefExemplar{Ref: s.ref, T: e.Ts, V: e.Value, HasTs: e.HasTs, Labels: e.Labels.Copy()})
	return s.ref, nil
}

// SetMetadata implements storage.Appender.
func (a *appender) SetMetadata(metricName string, m storage.Metadata) error {
	if metricName == "" {
		return fmt.Errorf("%w: metadata without a metric name", storage.ErrInvalidLabels)
	}
	if cur, ok := a.head.metadata.get(metricName); ok && cur == m {
		return nil
	}
	for _, e := range a.metadata {
		if e.MetricName == metricName && e.Type == m.Type && e.Help == m.Help && e.Unit == m.Unit {
			return nil
		}
	}
	a.metadata = append(a.metadata, record.RefMetadata{
		MetricName: strings.Clone(metricName),
		Type:       model.MetricType(strings.Clone(string(m.Type))),
		Help:       strings.Clone(m.Help),
		Unit:       strings.Clone(m.Unit),
	})
	return nil
}

// Commit logs the batch to the WAL and then applies it to the series.
func (a *appender) Commit() error {
	defer a.release()
	h := a.head

	recs := a.recs[:0]
	a.logSeries = a.logSeries[:0]
	for _, s := range a.unlogged {
		if !s.logged.Load() {
			a.logSeries = append(a.logSeries, record.RefSeries{Ref: s.ref, Labels: s.lset})
		}
	}
	if len(a.logSeries) > 0 {
		a.seriesBuf = record.EncodeSeries(a.seriesBuf[:0], a.logSeries)
		recs = append(recs, a.seriesBuf)
	}
	if len(a.samples) > 0 {
		a.samplesBuf = record.EncodeSamples(a.samplesBuf[:0], a.samples)
		recs = append(recs, a.samplesBuf)
	}
	if len(a.metadata) > 0 {
		a.metadataBuf = record.EncodeMetadata(a.metadataBuf[:0], a.metadata)
		recs = append(recs, a.metadataBuf)
	}
	if len(a.exemplars) > 0 {
		a.exemplarBuf = record.EncodeExemplars(a.exemplarBuf[:0], a.exemplars)
		recs = append(recs, a.exemplarBuf)
	}
	if len(recs) == 0 {
		return nil
	}
	h.commitMu.RLock()
	defer h.commitMu.RUnlock()
	if err := h.wal.Log(recs...); err != nil {
		return fmt.Errorf("log to WAL: %w", err)
	}
	for _, s := range a.unlogged {
		s.logged.Store(true)
	}
	if len(a.metadata) > 0 {
		h.metadata.set(a.metadata)
	}
	if len(a.exemplars) > 0 {
		h.exemplars.add(a.exemplars, h.seriesLabels)
	}

	// Apply, holding each series' lock once for a run of its samples.
	chunkSamples := h.opts.ChunkSamples
	var appended, dropped uint64
	for i := 0; i < len(a.samples); {
		s := a.series[i]
		s.mu.Lock()
		for ; i < len(a.samples) && a.series[i] == s; i++ {
			smpl := a.samples[i]
			// Another appender may have committed to this series since
			// Append checked. The sample is in the WAL; replay decides
			// the same way, dropping it there too.
			if dup, err := s.appendable(smpl.T, smpl.V); err != nil || dup {
				dropped++
				continue
			}
			s.append(smpl.T, smpl.V, chunkSamples, &h.arena, nil)
			appended++
		}
		s.mu.Unlock()
	}
	h.stats.samplesAppended.Add(appended)
	if dropped > 0 {
		h.stats.samplesDropped.Add(dropped)
	}
	h.maybeCheckpoint()
	return nil
}

func (a *appender) Rollback() error {
	a.release()
	return nil
}

// release clears the appender, keeping its buffers' capacity but no
// pointers into series or labels, and returns it to the pool.
func (a *appender) release() {
	clear(a.series)
	clear(a.unlogged)
	clear(a.logSeries)
	clear(a.metadata)
	a.metadata = a.metadata[:0]
	clear(a.exemplars)
	a.exemplars = a.exemplars[:0]
	a.samples = a.samples[:0]
	a.series = a.series[:0]
	a.unlogged = a.unlogged[:0]
	a.logSeries = a.logSeries[:0]
	a.recs = [4][]byte{}
	a.last = nil
	a.head = nil
	appenderPool.Put(a)
}
