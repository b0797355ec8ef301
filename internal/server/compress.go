package server

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
)

// responseCompression returns a wrapper that compresses a handler's
// responses of 1 KiB and more for clients that accept gzip, as
// Prometheus and VictoriaMetrics compress theirs, or zstd, preferred
// where a client accepts both; or, if !enabled, one that returns the
// handler as it is. A day-long range query's answer over a few hundred series is a
// megabyte of JSON or more; compressed, a fifth to a quarter of that.
// Both codecs run at their fastest level, as VictoriaMetrics' gzip does:
// the compression then costs a few milliseconds of CPU per megabyte.
func responseCompression(enabled bool) (func(http.Handler) http.Handler, error) {
	if !enabled {
		return func(h http.Handler) http.Handler { return h }, nil
	}
	wrap, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, err
	}
	return func(h http.Handler) http.Handler { return wrap(h) }, nil
}
