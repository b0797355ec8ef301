package proc

import (
	"sync"
	"time"
)

// SampleInterval is how often a Sampler reads /proc. VmHWM is a high-water
// mark the kernel keeps, so sampling misses no peak; the interval only
// bounds how stale the last reading is when the process dies before it
// can be read again, and four reads a second cost nothing measurable.
const SampleInterval = 250 * time.Millisecond

// Sampler reads the memory of a process and its descendants (ReadTreeMemory)
// in the background and keeps the last
// reading, so that a peak is known even when the process is killed. Its
// methods are safe for concurrent use.
type Sampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex
	last Memory
	err  error
	// rss is every reading's RSS and time, for MeanRSS: four a second
	// are some 14 000 an hour, little to keep.
	rss []rssReading
}

type rssReading struct {
	at  time.Time
	rss int64
}

// StartSampler starts sampling process pid.
func StartSampler(pid int) *Sampler {
	s := &Sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	s.read()
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.read()
		}
	}
}

// read takes a reading; once the process is gone, the last good reading
// stays.
func (s *Sampler) read() {
	m, err := ReadTreeMemory(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.last = m
	s.rss = append(s.rss, rssReading{at: time.Now(), rss: m.RSS})
}

// Peak reads the process now if it can and returns its peak RSS in bytes,
// or the last one read before it exited. It is 0 with an error if the
// process could never be read.
func (s *Sampler) Peak() (int64, error) {
	s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.Peak == 0 {
		return 0, s.err
	}
	return s.last.Peak, nil
}

// MeanRSS returns the mean of the RSS readings taken from from to to, in
// bytes: readings come at a steady interval, so it is the RSS averaged
// over that time. ok is false if no reading fell in it.
func (s *Sampler) MeanRSS(from, to time.Time) (mean int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum, n int64
	for _, r := range s.rss {
		if !r.at.Before(from) && !r.at.After(to) {
			sum += r.rss
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / n, true
}

// Reset sets the peaks of the process and its descendants back to their
// current RSS, so that Peak covers only what follows (see ResetPeak).
func (s *Sampler) Reset() error {
	if err := ResetPeak(s.pid); err != nil {
		return err
	}
	for _, p := range Tree(s.pid)[1:] {
		ResetPeak(p) // one that exits meanwhile has nothing to reset
	}
	s.mu.Lock()
	s.last = Memory{}
	s.mu.Unlock()
	s.read()
	return nil
}

// Stop stops sampling; Peak still returns the last reading.
func (s *Sampler) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}
