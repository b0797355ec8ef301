// Package sd registers the service discoveries a configuration file's
// scrape_configs and alertmanagers may use, besides static_configs: the
// ones most configurations use. Import it for its side effect.
//
// Prometheus itself can be built with a subset (its plugins.yml); each of
// the others is one import away, but the cloud providers' SDKs they bring
// made one package's build take ten minutes here.
package sd

import (
	_ "github.com/prometheus/prometheus/discovery/consul"
	_ "github.com/prometheus/prometheus/discovery/dns"
	_ "github.com/prometheus/prometheus/discovery/file"
	_ "github.com/prometheus/prometheus/discovery/http"
	_ "github.com/prometheus/prometheus/discovery/kubernetes"
)
