package run

import "github.com/strata-db/strata/internal/bench/workload"

// request is one encoded remote-write request.
type request struct {
	body    []byte
	round   int64
	samples int
}

// source hands each sender its next request. next(c) is only ever called
// from sender c's goroutine, one call at a time, so a source needs no lock
// for per-sender state.
type source interface {
	next(c int) (request, bool)
}

// poolSource serves pre-encoded requests.
type poolSource struct {
	pools [][]request
	pos   []int
}

func newPoolSource(pools [][]request) *poolSource {
	return &poolSource{pools: pools, pos: make([]int, len(pools))}
}

func (p *poolSource) next(c int) (request, bool) {
	if p.pos[c] == len(p.pools[c]) {
		return request{}, false
	}
	r := p.pools[c][p.pos[c]]
	p.pos[c]++
	return r, true
}

// encodeSource encodes each request just before it is sent, for loads
// that are not timed. Sender c sends requests [0, end[c]).
type encodeSource struct {
	encoders []*workload.Encoder
	bufs     [][]byte
	q, end   []int64
}

func newEncodeSource(sched *workload.Schedule, p workload.Protocol, rounds int64) *encodeSource {
	n := sched.Senders()
	s := &encodeSource{encoders: make([]*workload.Encoder, n), bufs: make([][]byte, n), q: make([]int64, n), end: make([]int64, n)}
	for c := range n {
		s.encoders[c] = workload.NewEncoder(sched, p)
		s.end[c] = rounds * int64(sched.BatchesPerRound(c))
	}
	return s
}

func (s *encodeSource) next(c int) (request, bool) {
	if s.q[c] == s.end[c] {
		return request{}, false
	}
	body, info, err := s.encoders[c].Append(s.bufs[c][:0], c, s.q[c])
	if err != nil {
		// Encoding cannot fail for a validated schedule; treat it as the
		// end so the load check reports the shortfall.
		return request{}, false
	}
	s.bufs[c] = body
	s.q[c]++
	return request{body: body, round: info.Round, samples: info.Samples}, true
}
