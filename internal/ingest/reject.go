// Package ingest holds what the receivers (remote-write, OTLP) share: the
// decision whether a refused sample is the sender's fault or the server's,
// and the account of what a request had refused.
package ingest

import (
	"fmt"
	"strings"
)

// IsBadData reports whether err, from an Append, means the data itself is
// invalid, so that sending it again cannot help (remote-write answers 400,
// OTLP counts the point as rejected). Any other error is the server's: the
// request is answered with a status the sender retries.
func IsBadData(err error) bool {
	return reasonOf(err) != reasonOther
}

// maxReportedErrors bounds how many problems a message lists; the rest
// are counted. A sender logs the message, and one broken series repeated a
// thousand times helps nobody.
const maxReportedErrors = 10

// Rejections collects why parts of a request were refused.
type Rejections struct {
	refused  int // samples or points refused
	errs     int // problems found, one per refused series or sample
	msgs     []string
	byReason [nReasons]int // the problems by reason
}

// Add records a problem that cost n samples or points (0 for one that
// cost none, such as a series without any).
func (rj *Rejections) Add(n int, err error) {
	rj.refused += n
	rj.errs++
	rj.byReason[reasonOf(err)]++
	if len(rj.msgs) < maxReportedErrors {
		rj.msgs = append(rj.msgs, err.Error())
	}
}

// Refused returns the samples or points refused.
func (rj *Rejections) Refused() int { return rj.refused }

// Any reports whether a problem was recorded.
func (rj *Rejections) Any() bool { return rj.errs > 0 }

// Reset empties rj for another request, keeping its memory.
func (rj *Rejections) Reset() {
	rj.refused, rj.errs = 0, 0
	rj.byReason = [nReasons]int{}
	clear(rj.msgs)
	rj.msgs = rj.msgs[:0]
}

// Message says how many of total what (samples, data points) were
// refused and lists the first problems, one per line.
func (rj *Rejections) Message(total int, what string) string {
	return fmt.Sprintf("%d of %d %s rejected%s", rj.refused, total, what, rj.Details())
}

// Details lists the first problems, each on a line of its own after a
// newline, and how many more there were.
func (rj *Rejections) Details() string {
	var b strings.Builder
	for _, m := range rj.msgs {
		b.WriteString("\n")
		b.WriteString(m)
	}
	if rj.errs > len(rj.msgs) {
		fmt.Fprintf(&b, "\n(%d more problems not listed)", rj.errs-len(rj.msgs))
	}
	return b.String()
}
