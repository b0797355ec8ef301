package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
)

// Admin is what the admin endpoints act on: the store.
type Admin interface {
	// Delete marks the samples in [mint, maxt] of the series that match
	// ms as deleted.
	Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error
	// CleanTombstones rewrites the blocks that have deleted samples
	// without them.
	CleanTombstones(ctx context.Context) error
	// Snapshot writes a copy of the store, the head's samples too
	// unless skipHead, and returns its name.
	Snapshot(skipHead bool) (string, error)
}

// registerAdmin adds the admin endpoints under /api/v1/admin/tsdb/, with
// the methods Prometheus takes. Without an Admin they answer 503 "admin
// APIs disabled", as Prometheus does without --web.enable-admin-api.
func (a *API) registerAdmin(mux *http.ServeMux) {
	snapshot := a.handler(func(r *http.Request) result {
		if a.admin == nil {
			return errResult(&apiError{typ: errorUnavailable, err: errAdminDisabled})
		}
		return a.snapshot(r)
	})
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		mux.Handle(m+" /api/v1/admin/tsdb/snapshot", snapshot)
	}
	for _, e := range []struct {
		path  string
		serve func(*http.Request) *apiError
	}{
		{"/api/v1/admin/tsdb/delete_series", a.deleteSeries},
		{"/api/v1/admin/tsdb/clean_tombstones", a.cleanTombstones},
	} {
		h := a.adminHandler(e.serve)
		for _, m := range []string{http.MethodPost, http.MethodPut} {
			mux.Handle(m+" "+e.path, h)
		}
	}
}

var errAdminDisabled = errors.New("admin APIs disabled")

// adminHandler serves an admin endpoint: 204 with no body once serve
// succeeds, as Prometheus answers.
func (a *API) adminHandler(serve func(*http.Request) *apiError) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.admin == nil {
			a.writeError(w, &apiError{typ: errorUnavailable, err: errAdminDisabled})
			return
		}
		if err := parseForm(r); err != nil {
			a.writeError(w, badData(fmt.Errorf("error parsing form values: %w", err)))
			return
		}
		if err := serve(r); err != nil {
			a.writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// deleteSeries marks the samples of the series of each match[] between
// start and end (default: all of time) as deleted.
func (a *API) deleteSeries(r *http.Request) *apiError {
	if len(r.Form["match[]"]) == 0 {
		return badData(errors.New("no match[] parameter provided"))
	}
	start, err := parseTimeParam(r, "start", minTime)
	if err != nil {
		return invalidParam("start", err)
	}
	end, err := parseTimeParam(r, "end", maxTime)
	if err != nil {
		return invalidParam("end", err)
	}
	if end.Before(start) {
		return badData(errors.New("end timestamp must not be before start time"))
	}
	sets, err := parseMatchers(a.parser, r.Form["match[]"])
	if err != nil {
		return invalidParam("match[]", err)
	}
	for _, ms := range sets {
		if err := a.admin.Delete(r.Context(), timestamp.FromTime(start), timestamp.FromTime(end), ms...); err != nil {
			return storeError(err)
		}
	}
	return nil
}

// cleanTombstones rewrites the blocks with deleted samples.
func (a *API) cleanTombstones(r *http.Request) *apiError {
	if err := a.admin.CleanTombstones(r.Context()); err != nil {
		return storeError(err)
	}
	return nil
}

// storeError is an admin endpoint's error: the store's failure is
// internal (500), as Prometheus answers, unless classify knows it better.
func storeError(err error) *apiError {
	if e := classify(err); e.typ != errorExec {
		return e
	}
	return &apiError{typ: errorInternal, err: err}
}

// snapshot writes a snapshot under the data directory's snapshots/ and
// answers its name, as Prometheus does; skip_head leaves the head out.
func (a *API) snapshot(r *http.Request) result {
	skipHead := false
	if v := r.FormValue("skip_head"); v != "" {
		var err error
		if skipHead, err = strconv.ParseBool(v); err != nil {
			return errResult(invalidParam("skip_head", err))
		}
	}
	name, err := a.admin.Snapshot(skipHead)
	if err != nil {
		return errResult(storeError(err))
	}
	return result{data: jsonData{struct {
		Name string `json:"name"`
	}{name}}}
}
