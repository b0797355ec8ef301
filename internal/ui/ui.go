// Package ui serves strata's web UI: a page to type PromQL into and see
// the answer as a table or a graph, the store's cardinality, and the
// server's status. It is a few static files embedded in the binary, that
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

// Handler serves the UI: the page at /, its assets under /static/.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	assets := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheable(assets)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
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
