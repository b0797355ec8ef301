package bucket

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/db"
)

// StoreOptions configures a Store.
type StoreOptions struct {
	Bucket objstore.BucketReader
	// Dir keeps a local copy of each block's index, Dir/<ULID>/index,
	// made when the block is first opened; it may be deleted, at the
	// cost of downloading them again.
	Dir string
	// CacheBytes bounds the chunk pages kept in memory.
	CacheBytes int64
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// DefaultStoreOptions returns the options `strata store` runs with.
func DefaultStoreOptions() StoreOptions {
	// 512 MiB of chunk pages: the chunks of a dashboard's queries over
	// a day of some ten thousand series, read once from the bucket.
	return StoreOptions{CacheBytes: 512 << 20}
}

// Store serves the blocks of a bucket as a storage.Queryable: each
// block's series with the block's external labels (its meta.json's
// thanos.labels) added, the blocks of one label set merged, as a node
// merges its own. Sync brings the list of blocks up to date.
//
// mu guards blocks; a querier holds the blocks it reads open (Close
// waits for it), so Sync may drop a block while a query reads it.
type Store struct {
	opts    StoreOptions
	logger  *slog.Logger
	pages   *pageCache
	metrics storeMetrics

	syncMu sync.Mutex
	mu     sync.RWMutex
	blocks map[ulid.ULID]*remoteBlock
	// metas holds the meta.json of each block listed at the last Sync,
	// served or not; syncMu guards it.
	metas map[ulid.ULID]storeMeta
}

type remoteBlock struct {
	*block.Block
	external labels.Labels
}

// NewStore returns a Store with no blocks; call Sync.
func NewStore(opts StoreOptions) *Store {
	s := &Store{opts: opts, logger: opts.Logger, blocks: map[ulid.ULID]*remoteBlock{}, metas: map[ulid.ULID]storeMeta{}}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.metrics = newStoreMetrics(opts.Registerer, s)
	s.pages = newPageCache(opts.CacheBytes, s.metrics.pageHits, s.metrics.pageMisses)
	return s
}

// Sync lists the bucket and brings the blocks served up to date: it
// opens those it has not opened and closes those gone from the bucket,
// marked for deletion, or covered by another served block (one of the
// same labels whose sources include all of theirs: a merge of them, the
// sources of which its compactor has not marked yet). A block that fails
// to open is logged and tried again at the next Sync; blocks it covers
// are served meanwhile.
func (s *Store) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.metrics.syncs.Inc()
	l, err := listBucket(ctx, s.opts.Bucket)
	if err != nil {
		s.metrics.failed.Inc()
		return err
	}
	for id := range s.metas {
		if !l.blocks[id] || l.marked[id] {
			delete(s.metas, id)
		}
	}
	var candidates []Meta
	for id := range l.blocks {
		if l.marked[id] {
			continue
		}
		m, ok := s.metas[id]
		if !ok {
			meta, raw, err := readMeta(ctx, s.opts.Bucket, id)
			if err == errNotBlock {
				continue // deleted since the listing
			}
			if err != nil {
				s.metrics.failed.Inc()
				s.logger.Warn("block of the bucket not opened; retried at the next sync", "ulid", id, "err", err)
				continue
			}
			m = storeMeta{Meta: meta, raw: raw}
			s.metas[id] = m
			if meta.Thanos.Source != source {
				s.logger.Info("block of the bucket not served: not written by strata (Thanos' store gateway serves it)", "ulid", id, "source", meta.Thanos.Source)
			}
		}
		if m.Thanos.Source != source {
			continue
		}
		candidates = append(candidates, m.Meta)
	}
	// Merges before their sources, so a merge is served in their place.
	slices.SortFunc(candidates, func(a, b Meta) int {
		if c := cmp.Compare(len(b.Sources), len(a.Sources)); c != 0 {
			return c
		}
		return a.ULID.Compare(b.ULID)
	})
	// Only a block of the same labels can cover another: the served
	// blocks by label set, and by ULID.
	served := map[string][]Meta{}
	servedIDs := map[ulid.ULID]bool{}
	for _, m := range candidates {
		key := labels.FromMap(m.Thanos.Labels).String()
		if slices.ContainsFunc(served[key], func(o Meta) bool { return covers(o, m) }) {
			continue
		}
		s.mu.RLock()
		_, ok := s.blocks[m.ULID]
		s.mu.RUnlock()
		if !ok {
			b, err := s.open(m, s.metas[m.ULID].raw)
			if err != nil {
				s.metrics.failed.Inc()
				s.logger.Warn("block of the bucket not opened; retried at the next sync", "ulid", m.ULID, "err", err)
				continue
			}
			s.mu.Lock()
			s.blocks[m.ULID] = b
			s.mu.Unlock()
			s.logger.Info("block opened", "ulid", m.ULID, "min_time", m.MinTime, "max_time", m.MaxTime, "labels", b.external.String())
		}
		served[key] = append(served[key], m)
		servedIDs[m.ULID] = true
	}
	s.mu.RLock()
	var drop []*remoteBlock
	for id, b := range s.blocks {
		if !servedIDs[id] {
			drop = append(drop, b)
		}
	}
	s.mu.RUnlock()
	for _, b := range drop {
		id := b.Meta().ULID
		s.mu.Lock()
		delete(s.blocks, id)
		s.mu.Unlock()
		if err := b.Close(); err != nil {
			s.logger.Warn("closing block", "ulid", id, "err", err)
		}
		os.RemoveAll(filepath.Join(s.opts.Dir, id.String()))
		s.logger.Info("block no longer served: deleted, marked for deletion or merged into another", "ulid", id)
	}
	return nil
}

// storeMeta is a block's meta.json, read and as it was read.
type storeMeta struct {
	Meta
	raw []byte
}

// covers reports whether block a holds every sample of block b: both
// carry the same external labels, and a's sources include all of b's. Of
// two blocks of the same sources, the one of the smaller ULID covers the
// other.
func covers(a, b Meta) bool {
	if a.ULID == b.ULID || !maps.Equal(a.Thanos.Labels, b.Thanos.Labels) {
		return false
	}
	as, bs := sources(a), sources(b)
	for _, id := range bs {
		if !slices.Contains(as, id) {
			return false
		}
	}
	return len(as) > len(bs) || a.ULID.Compare(b.ULID) < 0
}

// sources returns a block's sources: the level-1 blocks its samples were
// first written to, itself for one of those.
func sources(m Meta) []ulid.ULID {
	if len(m.Sources) == 0 {
		return []ulid.ULID{m.ULID}
	}
	return m.Sources
}

// errNotBlock says a directory of the bucket is no block (yet).
var errNotBlock = errors.New("no meta.json")

// open opens a block of the bucket from its meta.json.
func (s *Store) open(m Meta, raw []byte) (*remoteBlock, error) {
	files := &remoteFiles{bkt: s.opts.Bucket, id: m.ULID, meta: raw, sizes: map[string]int64{}, indexDir: s.opts.Dir, pages: s.pages}
	for _, f := range m.Thanos.Files {
		files.sizes[f.RelPath] = f.SizeBytes
	}
	b, err := block.Open(files)
	if err != nil {
		return nil, err
	}
	return &remoteBlock{Block: b, external: labels.FromMap(m.Thanos.Labels)}, nil
}

// Close closes every block.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, b := range s.blocks {
		errs = append(errs, b.Close())
		delete(s.blocks, id)
	}
	return errors.Join(errs...)
}

// LabelSets returns the external label sets of the blocks, sorted, each
// once.
func (s *Store) LabelSets() []labels.Labels {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var sets []labels.Labels
	for _, b := range s.blocks {
		if !slices.ContainsFunc(sets, func(l labels.Labels) bool { return labels.Equal(l, b.external) }) {
			sets = append(sets, b.external)
		}
	}
	slices.SortFunc(sets, labels.Compare)
	return sets
}

// TimeRange returns the oldest and newest times of the blocks;
// math.MaxInt64 and math.MinInt64 without any.
func (s *Store) TimeRange() (mint, maxt int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	mint, maxt = math.MaxInt64, math.MinInt64
	for _, b := range s.blocks {
		m := b.Meta()
		mint, maxt = min(mint, m.MinTime), max(maxt, m.MaxTime)
	}
	return mint, maxt
}

// Querier returns a querier over the blocks overlapping [mint, maxt].
// The blocks of one label set are read as the store reads its own, in
// time order (db.MergeQueriers): a series in blocks that follow one
// another is one series over their chunks, so that the StoreAPI's cache
// serves ranges over several blocks too.
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	s.mu.RLock()
	var selected []*remoteBlock
	for _, b := range s.blocks {
		if m := b.Meta(); m.MaxTime >= mint && m.MinTime <= maxt {
			selected = append(selected, b)
		}
	}
	slices.SortFunc(selected, func(a, b *remoteBlock) int {
		return cmp.Or(cmp.Compare(a.Meta().MinTime, b.Meta().MinTime), cmp.Compare(a.Meta().MaxTime, b.Meta().MaxTime))
	})
	groups := map[string][]storage.Querier{}
	external := map[string]labels.Labels{}
	var all []storage.Querier
	var err error
	for _, b := range selected {
		var q storage.Querier
		if q, err = b.Querier(mint, maxt); err != nil {
			break
		}
		all = append(all, q)
		key := b.external.String()
		groups[key] = append(groups[key], q)
		external[key] = b.external
	}
	s.mu.RUnlock()
	if err != nil {
		for _, q := range all {
			q.Close()
		}
		return nil, err
	}
	var qs []storage.Querier
	for key, g := range groups {
		qs = append(qs, &labelledQuerier{Querier: db.MergeQueriers(g), external: external[key]})
	}
	return storage.NewMergeQuerier(qs, nil, storage.ChainedSeriesMerge), nil
}

// labelledQuerier adds a label set to every series of a querier; a
// label of the set replaces the series' own of the same name, and the
// request's matchers on them are answered by the set.
type labelledQuerier struct {
	storage.Querier
	external labels.Labels
}

// matchers removes the matchers the external labels answer; ok is false
// if one of them excludes the set.
func (q *labelledQuerier) matchers(ms []*labels.Matcher) (out []*labels.Matcher, ok bool) {
	for _, m := range ms {
		if q.external.Has(m.Name) {
			if !m.Matches(q.external.Get(m.Name)) {
				return nil, false
			}
			continue
		}
		out = append(out, m)
	}
	return out, true
}

func (q *labelledQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	ms, ok := q.matchers(ms)
	if !ok {
		return storage.EmptySeriesSet()
	}
	if len(ms) == 0 {
		// Every series has a name.
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")}
	}
	// The blocks of the set are merged by their series' own labels, so
	// they are read sorted by those.
	set := &relabelSet{SeriesSet: q.Querier.Select(ctx, true, hints, ms...), external: q.external, b: labels.NewBuilder(labels.EmptyLabels())}
	if !sortSeries {
		return set
	}
	// Added labels may sort a series before one it came after, so a
	// sorted answer gathers the series and sorts them anew.
	var series []storage.Series
	for set.Next() {
		series = append(series, set.At())
	}
	if err := set.Err(); err != nil {
		return storage.ErrSeriesSet(err)
	}
	slices.SortFunc(series, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &sliceSeriesSet{series: series, warnings: set.Warnings()}
}

// relabelSet adds the external labels to each series of a set as it is
// read.
type relabelSet struct {
	storage.SeriesSet
	external labels.Labels
	b        *labels.Builder
}

func (r *relabelSet) At() storage.Series {
	s := r.SeriesSet.At()
	r.b.Reset(s.Labels())
	r.external.Range(func(l labels.Label) { r.b.Set(l.Name, l.Value) })
	return relabelled{Series: s, lset: r.b.Labels()}
}

func (q *labelledQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ms, ok := q.matchers(ms)
	if !ok {
		return nil, nil, nil
	}
	if v := q.external.Get(name); q.external.Has(name) {
		names, warns, err := q.Querier.LabelNames(ctx, &storage.LabelHints{Limit: 1}, ms...)
		if err != nil || len(names) == 0 {
			return nil, warns, err
		}
		return []string{v}, warns, nil
	}
	return q.Querier.LabelValues(ctx, name, hints, ms...)
}

func (q *labelledQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ms, ok := q.matchers(ms)
	if !ok {
		return nil, nil, nil
	}
	names, warns, err := q.Querier.LabelNames(ctx, hints, ms...)
	if err != nil || len(names) == 0 {
		return names, warns, err
	}
	q.external.Range(func(l labels.Label) { names = append(names, l.Name) })
	slices.Sort(names)
	return slices.Compact(names), warns, nil
}

type relabelled struct {
	storage.Series
	lset labels.Labels
}

func (r relabelled) Labels() labels.Labels { return r.lset }

// Unwrap returns the series as read from its blocks, for the StoreAPI's
// cache of their chunks.
func (r relabelled) Unwrap() storage.Series { return r.Series }

type sliceSeriesSet struct {
	series   []storage.Series
	i        int
	warnings annotations.Annotations
}

func (s *sliceSeriesSet) Next() bool {
	if s.i >= len(s.series) {
		return false
	}
	s.i++
	return true
}

func (s *sliceSeriesSet) At() storage.Series                { return s.series[s.i-1] }
func (s *sliceSeriesSet) Err() error                        { return nil }
func (s *sliceSeriesSet) Warnings() annotations.Annotations { return s.warnings }

// Run syncs every interval until ctx is done.
func (s *Store) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("bucket sync failed; retried at the next", "err", err)
		}
	}
}
