package ingest

import (
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter admits samples and points at most at a configured rate,
// over every receiver and sender it is given to; a nil *RateLimiter
// admits everything. Bursts of up to one second's worth are allowed.
type RateLimiter struct {
	l         *rate.Limiter
	perSecond float64
}

// NewRateLimiter returns a limiter of perSecond samples a second, nil if
// perSecond is not positive.
func NewRateLimiter(perSecond float64) *RateLimiter {
	if perSecond <= 0 {
		return nil
	}
	burst := int(min(perSecond, 1<<30))
	return &RateLimiter{l: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1)), perSecond: perSecond}
}

// Rate returns the configured samples per second, 0 for no limit.
func (r *RateLimiter) Rate() float64 {
	if r == nil {
		return 0
	}
	return r.perSecond
}

// Allow reports whether n more samples may be accepted now, taking them
// from the budget if so. A request larger than a second's worth is let
// through when the budget is full, so that no request is refused forever.
func (r *RateLimiter) Allow(n int) bool {
	if r == nil || n == 0 {
		return true
	}
	now := time.Now()
	if n > r.l.Burst() {
		if r.l.TokensAt(now) < float64(r.l.Burst()) {
			return false
		}
		r.l.AllowN(now, r.l.Burst())
		return true
	}
	return r.l.AllowN(now, n)
}
