package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/prometheus/promql"

	stratastorage "github.com/strata-db/strata/internal/storage"
)

// errorType is the "errorType" of an error response. Clients branch on the
// string, so the values are those of Prometheus' HTTP API.
type errorType string

const (
	errorTimeout     errorType = "timeout"
	errorCanceled    errorType = "canceled"
	errorExec        errorType = "execution"
	errorBadData     errorType = "bad_data"
	errorInternal    errorType = "internal"
	errorUnavailable errorType = "unavailable"
	errorNotFound    errorType = "not_found"
)

// statusClientClosedRequest is nginx's non-standard status for a request
// whose client went away before the answer was ready; Prometheus uses it
// for canceled queries, so clients expect it.
const statusClientClosedRequest = 499

// httpStatus is the status code Prometheus sends with an error of type t.
func (t errorType) httpStatus() int {
	switch t {
	case errorBadData:
		return http.StatusBadRequest
	case errorExec:
		return http.StatusUnprocessableEntity
	case errorCanceled:
		return statusClientClosedRequest
	case errorTimeout, errorUnavailable:
		return http.StatusServiceUnavailable
	case errorNotFound:
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

// apiError is an error together with the type it is reported as.
type apiError struct {
	typ errorType
	err error
}

func (e *apiError) Error() string { return string(e.typ) + ": " + e.err.Error() }

func badData(err error) *apiError { return &apiError{typ: errorBadData, err: err} }

// classify maps an error from the engine or a querier to the error type
// Prometheus reports it as: cancellation and timeout by their promql types,
// storage failures as internal, everything else as an execution error.
//
// Two additions to Prometheus' mapping: a querier that gives up because
// the deadline passed (it returns ctx.Err()) is a timeout, not an execution
// error, and a store that is not ready yet is unavailable (503), as
// Prometheus reports tsdb.ErrNotReady.
func classify(err error) *apiError {
	var (
		canceled promql.ErrQueryCanceled
		timedOut promql.ErrQueryTimeout
		storErr  promql.ErrStorage
	)
	switch {
	case errors.Is(err, stratastorage.ErrNotReady):
		return &apiError{typ: errorUnavailable, err: err}
	case errors.As(err, &canceled):
		return &apiError{typ: errorCanceled, err: err}
	case errors.As(err, &timedOut):
		return &apiError{typ: errorTimeout, err: err}
	case errors.As(err, &storErr):
		// promql.ErrStorage does not unwrap; look inside it by hand.
		if errors.Is(storErr.Err, stratastorage.ErrNotReady) {
			return &apiError{typ: errorUnavailable, err: err}
		}
		return &apiError{typ: errorInternal, err: err}
	case errors.Is(err, context.Canceled):
		return &apiError{typ: errorCanceled, err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{typ: errorTimeout, err: err}
	}
	return &apiError{typ: errorExec, err: err}
}
