package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// handleReload serves /-/reload as Prometheus does: POST or PUT reload
// the configuration file, answered once it is applied (200) or has
// failed (500, with the reason); without lifecycle enabled, 403.
// Without a configuration file there is nothing to reload, and a reload
// succeeds.
func handleReload(mux *http.ServeMux, enabled bool, cf *configFile) {
	reload := func(w http.ResponseWriter, _ *http.Request) {
		if !enabled {
			http.Error(w, "Lifecycle API is not enabled.", http.StatusForbidden)
			return
		}
		if cf == nil {
			return
		}
		if err := cf.reload(); err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, errNotRunning) {
				status = http.StatusServiceUnavailable
			}
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), status)
		}
	}
	mux.HandleFunc("POST /-/reload", reload)
	mux.HandleFunc("PUT /-/reload", reload)
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Only POST or PUT requests allowed", http.StatusMethodNotAllowed)
	})
}

// reloadOn reloads cf each time reload receives, until ctx ends. A
// failed reload is logged by cf and keeps the configuration in effect.
func reloadOn(ctx context.Context, reload <-chan struct{}, cf *configFile) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			_ = cf.reload()
		}
	}
}

// computeExternalURL is the URL alerts link back to: s, or, if empty,
// http://<hostname>:<port>/ of the listen address, as Prometheus'
// --web.external-url defaults.
func computeExternalURL(s, listen string) (*url.URL, error) {
	if s == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("the external URL: %w", err)
		}
		_, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("the external URL from %q: %w", listen, err)
		}
		s = "http://" + net.JoinHostPort(host, port) + "/"
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--web.external-url %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("--web.external-url %q: the scheme must be http or https", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}
