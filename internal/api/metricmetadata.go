package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	stratastorage "github.com/strata-db/strata/internal/storage"
)

// MetadataSource is where /api/v1/metadata reads metric metadata from.
type MetadataSource interface {
	// Metadata returns the metadata of every metric family, or of metric
	// alone if it is not "". The map is the caller's.
	Metadata(metric string) map[string]stratastorage.Metadata
}

// metricMetadata serves /api/v1/metadata: metric (optional), limit (most
// metric families), limit_per_metric. Prometheus answers it from its
// scrape targets; strata from the metadata senders send with their
// samples. strata keeps one entry per family, the latest, and Prometheus
// applies limit_per_metric only when it is positive, so that parameter is
// checked but never cuts anything.
func (a *API) metricMetadata(r *http.Request) result {
	limit, err := parseMetadataLimit(r.FormValue("limit"))
	if err != nil {
		return errResult(badData(err))
	}
	if s := r.FormValue("limit_per_metric"); s != "" {
		if _, err := strconv.Atoi(s); err != nil {
			return errResult(badData(errors.New("limit_per_metric must be a number")))
		}
	}
	var md map[string]stratastorage.Metadata
	if a.metadata != nil {
		md = a.metadata.Metadata(r.FormValue("metric"))
	}
	names := make([]string, 0, len(md))
	for name := range md {
		names = append(names, name)
	}
	slices.Sort(names)
	if limit >= 0 && len(names) > limit {
		names = names[:limit]
	}
	return result{data: &metadataData{names: names, md: md}}
}

// metadataData is the data of /api/v1/metadata: an object from metric name
// to a list of {type, help, unit}.
type metadataData struct {
	names []string
	md    map[string]stratastorage.Metadata
}

func (d *metadataData) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	for i, name := range d.names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, name)
		m := d.md[name]
		typ := string(m.Type)
		if typ == "" {
			typ = "unknown"
		}
		dst = append(dst, `:[{"type":`...)
		dst = appendString(dst, typ)
		dst = append(dst, `,"help":`...)
		dst = appendString(dst, m.Help)
		dst = append(dst, `,"unit":`...)
		dst = appendString(dst, m.Unit)
		dst = append(dst, "}]"...)
	}
	return append(dst, '}'), nil
}
