// Package ui serves strata's web UI: panels to type PromQL into and see
// the answers as tables or graphs, kept in the page's URL as Prometheus'
// UI keeps them; alerts, rules, targets and service discovery; the
// store's cardinality, head and blocks; and the server's status. It is a few static files embedded in the binary, that
// read the HTTP API as any client does; nothing is built to run it, and
// it works offline (the charting library, uPlot, is committed with its
// licence under static/vendor).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// Handler serves the UI: the page at /, /graph and /query, its assets
// under /static/.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	assets := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheable(assets)))
	page := func(w http.ResponseWriter, r *http.Request) { http.ServeFileFS(w, r, static, "index.html") }
	mux.HandleFunc("GET /{$}", page)
	// Prometheus' addresses of its query page, which links from Grafana
	// and bookmarks carry (/graph?g0.expr=..., /query?g0.expr=...).
	mux.HandleFunc("GET /graph", page)
	mux.HandleFunc("GET /query", page)
	return mux
}

// cacheable lets browsers keep the assets for an hour: they change only
// with the binary.
func cacheable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}
