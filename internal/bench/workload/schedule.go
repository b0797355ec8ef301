package workload

import (
	"errors"
	"fmt"
)

// Options describe a workload. The zero value is not valid; start from
// DefaultOptions.
type Options struct {
	// Seed makes the labels and values; the same seed gives the same bytes.
	Seed uint64
	// Series is how many series are live at a time (N).
	Series int
	// Labels is how many labels each series has besides __name__ (K).
	Labels int
	// SamplesPerSeries is how many samples of each series one request
	// carries (S).
	SamplesPerSeries int
	// SeriesPerRequest is how many series one request carries at most.
	SeriesPerRequest int
	// Senders is how many requests are in flight at once (C).
	Senders int
	// Churn is the fraction of a sender's series replaced by new ones at
	// every churn event, and ChurnEvery how many requests of the sender
	// separate churn events (R). ChurnEvery 0 or Churn 0 means no churn.
	Churn      float64
	ChurnEvery int
	// Start is the timestamp of the first sample, in milliseconds, and
	// Interval the time between a series' samples (its scrape interval).
	Start    int64
	Interval int64
	// Values is how sample values are made; "" is ValuesNode.
	Values Values
}

// Values names a way of making sample values.
type Values string

const (
	// ValuesNode makes node-exporter-like values: counters, gauges in
	// bands and histogram buckets, whole numbers of units (see Value).
	ValuesNode Values = "node"
	// ValuesNoisy makes every series a gauge of random values with full
	// float precision, as ratios and sensor readings are: the worst case
	// for float compression, for disk figures.
	ValuesNoisy Values = "noisy"
)

// value returns the k-th sample value of series id.
func (o Options) value(id uint64, k int64) float64 {
	if o.Values == ValuesNoisy {
		return NoisyValue(o.Seed, id, k)
	}
	return Value(o.Seed, id, k)
}

// MaxSenders bounds the concurrency: far more requests in flight than a
// server has cores only measures its queueing, and each is a connection.
const MaxSenders = 1024

// DefaultOptions returns the options of a benchmark run without flags.
func DefaultOptions() Options {
	return Options{
		Seed:             1,
		Series:           100_000,
		Labels:           10,
		SamplesPerSeries: 1,
		// Prometheus' remote-write default max_samples_per_send is 2000;
		// with one sample per series that is 2000 series a request.
		SeriesPerRequest: 2000,
		// Four requests in flight keep two server cores busy (one
		// decoding while another waits on its log) without turning the
		// benchmark into a test of queueing.
		Senders: 4,
		// With the default shape a sender sends 25 requests a round, so
		// 100 requests is four rounds (a minute of data): --churn 0.01
		// then replaces 1% of the series a minute, the pod churn of a
		// busy Kubernetes cluster. Churn stays off until --churn is set.
		ChurnEvery: 100,
		Interval:   15_000, // the scrape interval of most Prometheus setups
	}
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	switch {
	case o.Values != "" && o.Values != ValuesNode && o.Values != ValuesNoisy:
		return fmt.Errorf("values %q: want %q or %q", o.Values, ValuesNode, ValuesNoisy)
	case o.Series < 1:
		return errors.New("series must be at least 1")
	case o.Labels < MinLabels || o.Labels > MaxLabels:
		return fmt.Errorf("labels must be between %d and %d (got %d): fewer cannot keep every series unique", MinLabels, MaxLabels, o.Labels)
	case o.SamplesPerSeries < 1:
		return errors.New("samples per series per request must be at least 1")
	case o.SeriesPerRequest < 1:
		return errors.New("series per request must be at least 1")
	case o.Senders < 1:
		return errors.New("concurrency must be at least 1")
	case o.Senders > MaxSenders:
		return fmt.Errorf("concurrency %d is over the limit of %d", o.Senders, MaxSenders)
	case o.Senders > o.Series:
		return fmt.Errorf("concurrency %d exceeds the series count %d: every sender needs series of its own", o.Senders, o.Series)
	case o.Churn < 0 || o.Churn > 1:
		return fmt.Errorf("churn must be a fraction between 0 and 1 (got %g)", o.Churn)
	case o.ChurnEvery < 0:
		return errors.New("churn interval must not be negative")
	case o.Interval < 1:
		return errors.New("sample interval must be at least 1ms")
	}
	return nil
}

// Schedule assigns series to senders and says what each request carries.
// It is immutable and safe for concurrent use.
//
// Sender c owns the contiguous slot range [first, first+n) of the N
// series slots and cuts it into batches of SeriesPerRequest slots. Its
// request q carries batch q mod batches, with the samples of round
// q / batches: timestamps Start + (round*S + j)*Interval for j < S. So each
// slot's timestamps grow with q, and a sender that sends its requests in
// order sends every series in order.
//
// Churn event e of a sender happens just before its request e*ChurnEvery
// and replaces the next churnSize slots of its range, going round it, with
// series that have new ids: slot position p after E events has been
// replaced gen(p, E) times, and its series id is gen*N + slot. Ids are
// never reused, so a replacement series starts a fresh time line.
type Schedule struct {
	opts   Options
	shards []shard
}

type shard struct {
	first, n  int // slot range
	batches   int // ceil(n / SeriesPerRequest)
	churnSize int // slots replaced per churn event
}

// NewSchedule validates o and returns its schedule.
func NewSchedule(o Options) (*Schedule, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Schedule{opts: o, shards: make([]shard, o.Senders)}
	for c := range s.shards {
		first := c * o.Series / o.Senders
		next := (c + 1) * o.Series / o.Senders
		sh := shard{first: first, n: next - first}
		sh.batches = (sh.n + o.SeriesPerRequest - 1) / o.SeriesPerRequest
		if o.Churn > 0 && o.ChurnEvery > 0 {
			sh.churnSize = min(max(int(o.Churn*float64(sh.n)+0.5), 1), sh.n)
		}
		s.shards[c] = sh
	}
	return s, nil
}

// Options returns the options the schedule was made from.
func (s *Schedule) Options() Options { return s.opts }

// Senders returns the number of senders.
func (s *Schedule) Senders() int { return len(s.shards) }

// BatchesPerRound returns how many requests sender c sends per round, that
// is, to send one round of samples for all its series.
func (s *Schedule) BatchesPerRound(c int) int { return s.shards[c].batches }

// Round returns the round of request q of sender c.
func (s *Schedule) Round(c int, q int64) int64 { return q / int64(s.shards[c].batches) }

// Timestamp returns the timestamp of sample j of round r, in milliseconds.
func (s *Schedule) Timestamp(r int64, j int) int64 {
	return s.opts.Start + s.SampleIndex(r, j)*s.opts.Interval
}

// SampleIndex returns the index k of sample j of round r, the argument
// Value takes.
func (s *Schedule) SampleIndex(r int64, j int) int64 {
	return r*int64(s.opts.SamplesPerSeries) + int64(j)
}

// AppendSeries appends the ids of the series request q of sender c
// carries to dst, in slot order, and returns it.
func (s *Schedule) AppendSeries(dst []uint64, c int, q int64) []uint64 {
	sh := &s.shards[c]
	b := int(q % int64(sh.batches))
	var events int64
	if sh.churnSize > 0 {
		events = q / int64(s.opts.ChurnEvery)
	}
	lo := b * s.opts.SeriesPerRequest
	hi := min(lo+s.opts.SeriesPerRequest, sh.n)
	for p := lo; p < hi; p++ {
		gen := generation(int64(p), events, int64(sh.churnSize), int64(sh.n))
		dst = append(dst, uint64(gen)*uint64(s.opts.Series)+uint64(sh.first+p))
	}
	return dst
}

// generation returns how many times slot position p of a range of n slots
// has been replaced after events churn events of size m each. The events
// replace positions 0..m-1, then m..2m-1 and so on around the range, so
// after them the first events*m positions of the endless repetition of the
// range have been replaced.
func generation(p, events, m, n int64) int64 {
	replaced := events * m
	if replaced <= p {
		return 0
	}
	return (replaced-1-p)/n + 1
}
