package head

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

// Appender returns an appender for a batch of samples. See storage.Appender
// for the contract.
func (h *Head) Appender(ctx context.Context) storage.Appender {
	var a *appender
	select {
	case a = <-h.appenders:
	default:
		a = &appender{}
	}
	a.head = h
	a.gen = -1
	a.wholeScrapes = storage.WholeScrapes(ctx)
	a.mint, a.maxt = math.MaxInt64, math.MinInt64
	return a
}

// appender buffers a batch until Commit. It is used by one goroutine.
type appender struct {
	head *Head

	// batches are the parts of the batch, batches[cur] the one being
	// filled; see appendBatch. Their memory is reused across commits.
	batches []appendBatch
	cur     int
	// partKinds holds, for each series with histograms in the current
	// part, the kind of them applied last (see kindRank). A sample of
	// such a series of a kind applied earlier starts a new part. Floats
	// come first, so a batch of floats never looks at it.
	partKinds map[*memSeries]chunkenc.Encoding
	// gen is the generation of appenderGens the appender entered with
	// its first Append, -1 before; see Truncate.
	gen int
	// unlogged are series of this batch whose series record may not be in
	// the WAL yet; Commit logs those it still finds unlogged. A series may
	// be listed more than once.
	unlogged []*memSeries
	// last is the series of the previous Append and lastKind the kind of
	// its sample, the newest of its slice, so that samples of one series
	// sent in one batch are checked against each other and not only
	// against what is committed.
	last      *memSeries
	lastKind  chunkenc.Encoding
	lastStart int64 // the start time in effect for last's newest sample
	// mint and maxt bound the batch's samples' timestamps.
	mint, maxt int64

	// starts are the changes of start times of this batch, startSeries
	// their series, and pendingStart the start time each of those series
	// has after them, for its next sample in the batch. Start times
	// rarely change, so a batch seldom has any.
	starts       []record.RefStartTime
	startSeries  []*memSeries
	pendingStart map[*memSeries]int64

	// metadata are the changed metadata entries of this batch, their
	// strings copied.
	metadata []record.RefMetadata
	// exemplars of this batch, their labels copied.
	exemplars []record.RefExemplar

	logSeries   []record.RefSeries
	logLabels   labels.ScratchBuilder // builds logSeries' labels
	seriesBuf   []byte
	startsBuf   []byte
	metadataBuf []byte
	exemplarBuf []byte
	recs        [][]byte
	// dense re-encodes the chunks Commit closes (see memSeries.densify),
	// and spillBuf is chunkMem.spillBuf, kept across commits: densify
	// puts a whole chunk together in it.
	dense    chunkenc.Densifier
	spillBuf []byte
	// wholeScrapes is set for a scrape's appender (see
	// storage.WithWholeScrapes): its commit writes the parts of open
	// chunks out together (see flushSpills). Other batches, a slice of
	// a sender's series, seldom fill their open chunks in step: at a
	// million series of remote-write, most parts were still written
	// one at a time, and the flush cost 5% more memory for no less CPU
	// (docs/benchmarks.md).
	wholeScrapes bool
	// spillQueue is chunkMem's, and spillWrites, spillParts and
	// spillData flushSpills' scratch memory, kept across commits.
	spillQueue  []queuedSpill
	spillWrites []spillWrite
	spillParts  []arenaPart
	spillData   []byte
	// late, merged and lateRun are chunkMem's, kept across commits so
	// that late samples do not grow them anew each time.
	late, merged, lateRun []lateSample
	trim                  bufferTrim
}

func (a *appender) Append(ref storage.SeriesRef, lset labels.Labels, smpl storage.Sample) (storage.SeriesRef, error) {
	h := a.head
	kind := chunkenc.EncXOR
	switch {
	case smpl.H != nil && smpl.FH != nil:
		h.stats.samplesRejected.Add(1)
		return ref, fmt.Errorf("%w: series %s, timestamp %d: both an integer and a float histogram", storage.ErrInvalidHistogram, lset, smpl.T)
	case smpl.H != nil:
		kind = chunkenc.EncHistogram
		if err := smpl.H.Validate(); err != nil {
			h.stats.samplesRejected.Add(1)
			return ref, fmt.Errorf("%w: series %s, timestamp %d: %w", storage.ErrInvalidHistogram, lset, smpl.T, err)
		}
	case smpl.FH != nil:
		kind = chunkenc.EncFloatHistogram
		if err := smpl.FH.Validate(); err != nil {
			h.stats.samplesRejected.Add(1)
			return ref, fmt.Errorf("%w: series %s, timestamp %d: %w", storage.ErrInvalidHistogram, lset, smpl.T, err)
		}
	}
	if floor := h.appendFloor.Load(); smpl.T < floor {
		switch {
		case !h.acceptsLate(smpl.T):
			h.stats.samplesRejected.Add(1)
			return ref, fmt.Errorf("%w: series %s, timestamp %d is before %d, which is in blocks already", storage.ErrOutOfBounds, lset, smpl.T, floor)
		case h.frozenOverlaps(smpl.T, smpl.T):
			return ref, fmt.Errorf("%w: series %s, timestamp %d", storage.ErrCompacting, lset, smpl.T)
		}
	}
	var (
		s         *memSeries
		dup       bool
		err       error
		prevStart int64
		// late: the sample is older than the series' newest, within
		// the out-of-order window.
		late bool
	)
	if a.gen < 0 {
		a.gen = h.appenderGens.enter()
	}
	for {
		if s, err = a.series(ref, lset); err != nil {
			h.stats.samplesRejected.Add(1)
			return 0, err
		}
		if s == a.last {
			// Live since its first sample of the batch.
			dup, err = a.checkLast(kind, smpl)
			prevStart = a.lastStart
			if late = err == storage.ErrOutOfOrderSample && h.acceptsLate(smpl.T); late {
				s.mu.Lock()
				dup, err = s.checkLate(lateSample{t: smpl.T, v: smpl.V, h: smpl.H, fh: smpl.FH})
				s.mu.Unlock()
			}
			break
		}
		s.mu.Lock()
		if !s.takeForAppend() {
			s.mu.Unlock()
			ref = 0
			continue
		}
		if kind == chunkenc.EncXOR {
			dup, err = s.appendable(smpl.T, smpl.V)
		} else {
			dup, err = s.appendableHistogram(smpl.T, smpl.H, smpl.FH)
		}
		if late = err == storage.ErrOutOfOrderSample && h.acceptsLate(smpl.T); late {
			dup, err = s.checkLate(lateSample{t: smpl.T, v: smpl.V, h: smpl.H, fh: smpl.FH})
		}
		prevStart = s.currentStart()
		if !s.logged() {
			a.unlogged = append(a.unlogged, s)
		}
		s.mu.Unlock()
		if st, ok := a.pendingStart[s]; ok {
			prevStart = st
		}
		break
	}
	if err != nil {
		h.stats.samplesRejected.Add(1)
		return s.ref, fmt.Errorf("%w: series %s, timestamp %d", err, h.labelsOf(s), smpl.T)
	}
	if dup {
		return s.ref, nil
	}
	if len(a.batches) == 0 {
		a.batches = append(a.batches, appendBatch{})
	}
	if len(a.partKinds) > 0 && kindRank(kind) < kindRank(a.partKinds[s]) {
		// Applied in this part, the sample would go before an earlier
		// one of its series.
		a.cur++
		if a.cur == len(a.batches) {
			a.batches = append(a.batches, appendBatch{})
		}
		clear(a.partKinds)
	}
	if kind != chunkenc.EncXOR && kindRank(kind) > kindRank(a.partKinds[s]) {
		if a.partKinds == nil {
			a.partKinds = map[*memSeries]chunkenc.Encoding{}
		}
		a.partKinds[s] = kind
	}
	b := &a.batches[a.cur]
	switch kind {
	case chunkenc.EncXOR:
		b.samples = append(b.samples, record.RefSample{Ref: s.ref, T: smpl.T, V: smpl.V})
		b.series = append(b.series, s)
	case chunkenc.EncHistogram:
		b.addHistogram(s, smpl.T, smpl.H)
	case chunkenc.EncFloatHistogram:
		b.addFloatHistogram(s, smpl.T, smpl.FH)
	}
	// A late sample's start time is not recorded: the history of start
	// times follows the newest sample. One after its sample is kept as
	// it came, as Prometheus keeps it: PromQL tells it apart.
	if st := smpl.ST; st != prevStart && !late {
		a.starts = append(a.starts, record.RefStartTime{Ref: s.ref, T: smpl.T, ST: st})
		a.startSeries = append(a.startSeries, s)
		if a.pendingStart == nil {
			a.pendingStart = map[*memSeries]int64{}
		}
		a.pendingStart[s] = st
		prevStart = st
	}
	a.last, a.lastKind, a.lastStart = s, kind, prevStart
	a.mint, a.maxt = min(a.mint, smpl.T), max(a.maxt, smpl.T)
	return s.ref, nil
}

// series returns the series of ref, or of lset if ref is 0 or unknown,
// creating it if there is none.
func (a *appender) series(ref storage.SeriesRef, lset labels.Labels) (*memSeries, error) {
	h := a.head
	if ref != 0 {
		if s := h.series.getByRef(ref); s != nil {
			return s, nil
		}
	}
	hash := lset.Hash()
	if s := h.series.getByHash(hash, lset); s != nil {
		return s, nil
	}
	if err := validateLabels(lset); err != nil {
		return nil, err
	}
	if limit := h.opts.MaxSeries; limit > 0 && h.stats.series.Load() >= int64(limit) {
		return nil, fmt.Errorf("%w: %s would be series %d, the limit is %d", storage.ErrSeriesLimit, lset, limit+1, limit)
	}
	return h.getOrCreate(hash, lset, 0)
}

// checkLast is appendable for a sample of a.last, checked against that
// series' newest sample in the batch.
func (a *appender) checkLast(kind chunkenc.Encoding, smpl storage.Sample) (dup bool, err error) {
	b := &a.batches[a.cur]
	var t int64
	switch a.lastKind {
	case chunkenc.EncXOR:
		prev := b.samples[len(b.samples)-1]
		if kind == chunkenc.EncXOR {
			return checkOrder(prev.T, prev.V, smpl.T, smpl.V)
		}
		t = prev.T
	case chunkenc.EncHistogram:
		prev := b.hists[len(b.hists)-1]
		if kind == chunkenc.EncHistogram && smpl.T == prev.T {
			if sameHistogram(prev.H, nil, smpl.H, nil) {
				return true, nil
			}
		}
		t = prev.T
	case chunkenc.EncFloatHistogram:
		prev := b.fhists[len(b.fhists)-1]
		if kind == chunkenc.EncFloatHistogram && smpl.T == prev.T {
			if sameHistogram(nil, prev.FH, nil, smpl.FH) {
				return true, nil
			}
		}
		t = prev.T
	}
	switch {
	case smpl.T > t:
		return false, nil
	case smpl.T < t:
		return false, storage.ErrOutOfOrderSample
	}
	return false, storage.ErrDuplicateSampleForTimestamp
}

// AppendExemplar implements storage.Appender.
func (a *appender) AppendExemplar(ref storage.SeriesRef, lset labels.Labels, e exemplar.Exemplar) (storage.SeriesRef, error) {
	h := a.head
	if h.opts.MaxExemplars <= 0 {
		return ref, nil
	}
	if a.gen < 0 {
		a.gen = h.appenderGens.enter()
	}
	// An exemplar may come before any sample of its series, or without
	// one: it creates the series, as in Prometheus, which a query then
	// finds by its exemplars only.
	var (
		s        *memSeries
		err      error
		unlogged bool
	)
	for {
		if s, err = a.series(ref, lset); err != nil {
			return 0, err
		}
		if s == a.last {
			break
		}
		s.mu.Lock()
		if !s.takeForAppend() {
			s.mu.Unlock()
			ref = 0
			continue
		}
		unlogged = !s.logged()
		s.mu.Unlock()
		break
	}
	dup, err := h.exemplars.validate(s.ref, e)
	if err != nil {
		return s.ref, fmt.Errorf("%w: series %s, timestamp %d", err, h.labelsOf(s), e.Ts)
	}
	if dup {
		return s.ref, nil
	}
	if unlogged {
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
		s.mu.Lock()
		logged := s.logged()
		s.mu.Unlock()
		if !logged {
			a.logSeries = append(a.logSeries, record.RefSeries{Ref: s.ref, Labels: h.series.symbols.labels(h.series.symbols.idsOf(s.syms), &a.logLabels)})
		}
	}
	if len(a.logSeries) > 0 {
		a.seriesBuf = record.EncodeSeries(a.seriesBuf[:0], a.logSeries)
		recs = append(recs, a.seriesBuf)
	}
	for i := range a.parts() {
		recs = a.batches[i].encode(recs)
	}
	if len(a.starts) > 0 {
		a.startsBuf = record.EncodeStartTimes(a.startsBuf[:0], a.starts)
		recs = append(recs, a.startsBuf)
	}
	if len(a.metadata) > 0 {
		a.metadataBuf = record.EncodeMetadata(a.metadataBuf[:0], a.metadata)
		recs = append(recs, a.metadataBuf)
	}
	if len(a.exemplars) > 0 {
		a.exemplarBuf = record.EncodeExemplars(a.exemplarBuf[:0], a.exemplars)
		recs = append(recs, a.exemplarBuf)
	}
	a.recs = recs
	if len(recs) == 0 {
		return nil
	}
	h.commitMu.RLock()
	defer h.commitMu.RUnlock()
	if floor := h.appendFloor.Load(); a.mint < floor && (h.opts.OutOfOrderWindow <= 0 || h.frozenOverlaps(a.mint, a.maxt)) {
		// The range of a sample was frozen for a block since Append
		// took it. Nothing is stored; a retry gets ErrOutOfBounds for
		// that sample from Append, or takes it late once the range is
		// written, and stores the rest.
		return fmt.Errorf("%w: a sample at %d is in a range written to a block meanwhile (before %d)", storage.ErrCompacting, a.mint, floor)
	}
	if err := h.wal.Log(recs...); err != nil {
		return fmt.Errorf("log to WAL: %w", err)
	}
	for _, s := range a.unlogged {
		s.mu.Lock()
		s.state |= seriesLogged
		s.mu.Unlock()
	}
	if len(a.metadata) > 0 {
		h.metadata.set(a.metadata)
	}
	if len(a.exemplars) > 0 {
		h.exemplars.add(a.exemplars, h.seriesLabels)
	}

	m := &chunkMem{samples: h.opts.ChunkSamples, blockRange: h.opts.BlockRange, arena: h.arena, series: &h.series.cells, dense: &a.dense, spillBuf: a.spillBuf, marks: h.marks,
		late: a.late, merged: a.merged, lateRun: a.lateRun, deferSpills: a.wholeScrapes, spillQueue: a.spillQueue}
	var appended, dropped uint64
	for i := range a.parts() {
		n, d := a.batches[i].apply(m)
		appended += n
		dropped += d
	}
	a.spillWrites, a.spillParts, a.spillData = h.flushSpills(m, a.spillWrites, a.spillParts, a.spillData)
	a.spillQueue = m.spillQueue
	a.spillBuf = m.spillBuf
	// What they hold points to histograms, which they must not keep.
	clear(m.late)
	clear(m.merged)
	a.late, a.merged, a.lateRun = m.late[:0], m.merged[:0], m.lateRun
	if len(m.retired) > 0 {
		h.retireChunks(m.retired)
	}
	if m.inserted > 0 {
		h.stats.samplesLate.Add(m.inserted)
	}
	for i, e := range a.starts {
		s := a.startSeries[i]
		s.mu.Lock()
		s.setStart(e.T, e.ST, &h.series.cells)
		s.mu.Unlock()
	}
	if appended > 0 {
		h.widenTimes(a.mint, a.maxt)
		h.checkCompactable()
	}
	h.stats.samplesAppended.Add(appended)
	if dropped > 0 {
		h.stats.samplesDropped.Add(dropped)
	}
	h.maybeCheckpoint()
	return nil
}

// maxKeptBytes and trimAfterBatches bound what an idle appender keeps:
// a buffer over maxKeptBytes is let go once the appender has taken
// trimAfterBatches batches since one filled a buffer past that. A
// remote-write request or an OTLP export of a few thousand samples
// needs some hundreds of KiB in the largest buffer (the series records
// of its new series), and a steady stream of larger batches keeps what
// they need; but a batch of a hundred thousand new series left 24 MB in
// the appender that took it, which each of the pool's appenders kept
// for good after the largest batch it ever took.
const (
	maxKeptBytes     = 1 << 20
	trimAfterBatches = 16
)

// bufferTrim is what an appender knows of its batches for trimmed.
type bufferTrim struct {
	// small counts the batches since one filled a buffer past
	// maxKeptBytes; filled says whether the one being released did.
	small  int
	filled bool
}

// trimmed returns s emptied, or nil if its memory is over maxKeptBytes,
// the batch being released did not fill it past that, and none has for
// trimAfterBatches batches. Elements that point to memory must have
// been cleared.
func trimmed[S ~[]E, E any](t *bufferTrim, s S) S {
	var e E
	size := unsafe.Sizeof(e)
	switch {
	case uintptr(len(s))*size > maxKeptBytes:
		t.filled = true
	case uintptr(cap(s))*size > maxKeptBytes && t.small >= trimAfterBatches:
		return nil
	}
	return s[:0]
}

// released counts the batch just released for trimmed.
func (t *bufferTrim) released() {
	if t.filled {
		t.small, t.filled = 0, false
	} else {
		t.small++
	}
}

// maxKeptEntries is the most entries a map an idle appender keeps may
// have held: clearing a map keeps the memory of its entries. The maps
// are of histograms' and start times' rare cases, so one that grew past
// it is let go at once.
const maxKeptEntries = 1 << 14

// trimmedMap returns m emptied, or nil if it held over maxKeptEntries.
func trimmedMap[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) > maxKeptEntries {
		return nil
	}
	clear(m)
	return m
}

// parts returns the batch's parts that may hold samples.
func (a *appender) parts() []appendBatch {
	return a.batches[:min(a.cur+1, len(a.batches))]
}

func (a *appender) Rollback() error {
	a.release()
	return nil
}

// release clears the appender, keeping its buffers' capacity but no
// pointers into series or labels, and returns it to the pool. Buffers a
// rare large batch grew are let go (see trimmed).
func (a *appender) release() {
	t := &a.trim
	clear(a.metadata)
	a.metadata = trimmed(t, a.metadata)
	clear(a.exemplars)
	a.exemplars = trimmed(t, a.exemplars)
	for i := range a.parts() {
		a.batches[i].reset(t)
	}
	a.cur = 0
	a.partKinds = trimmedMap(a.partKinds)
	a.pendingStart = trimmedMap(a.pendingStart)
	clear(a.startSeries)
	a.starts, a.startSeries = trimmed(t, a.starts), trimmed(t, a.startSeries)
	if a.gen >= 0 {
		a.head.appenderGens.leave(a.gen)
		a.gen = -1
	}
	clear(a.unlogged)
	clear(a.logSeries)
	a.unlogged = trimmed(t, a.unlogged)
	a.logSeries = trimmed(t, a.logSeries)
	clear(a.recs)
	a.recs = trimmed(t, a.recs)
	a.seriesBuf, a.startsBuf = trimmed(t, a.seriesBuf), trimmed(t, a.startsBuf)
	a.metadataBuf, a.exemplarBuf = trimmed(t, a.metadataBuf), trimmed(t, a.exemplarBuf)
	a.spillBuf = trimmed(t, a.spillBuf)
	a.spillQueue = trimmed(t, a.spillQueue)
	a.spillWrites, a.spillParts = trimmed(t, a.spillWrites), trimmed(t, a.spillParts)
	a.spillData = trimmed(t, a.spillData)
	a.late, a.merged, a.lateRun = trimmed(t, a.late), trimmed(t, a.merged), trimmed(t, a.lateRun)
	t.released()
	a.last = nil
	h := a.head
	a.head = nil
	select {
	case h.appenders <- a:
	default:
	}
}
