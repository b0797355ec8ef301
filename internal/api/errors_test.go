package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/promql"

	stratastorage "github.com/strata-db/strata/internal/storage"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err    error
		typ    errorType
		status int
	}{
		{promql.ErrQueryCanceled("expression evaluation"), errorCanceled, 499},
		{promql.ErrQueryTimeout("expression evaluation"), errorTimeout, 503},
		{promql.ErrStorage{Err: errors.New("disk on fire")}, errorInternal, 500},
		{promql.ErrStorage{Err: fmt.Errorf("open: %w", stratastorage.ErrNotReady)}, errorUnavailable, 503},
		{fmt.Errorf("select: %w", stratastorage.ErrNotReady), errorUnavailable, 503},
		{fmt.Errorf("select: %w", context.Canceled), errorCanceled, 499},
		{fmt.Errorf("select: %w", context.DeadlineExceeded), errorTimeout, 503},
		{errors.New("vector cannot contain metrics with the same labelset"), errorExec, 422},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			got := classify(tc.err)
			if got.typ != tc.typ {
				t.Errorf("type %s, want %s", got.typ, tc.typ)
			}
			if s := got.typ.httpStatus(); s != tc.status {
				t.Errorf("status %d, want %d", s, tc.status)
			}
			if got.err != tc.err {
				t.Errorf("error %v, want it unchanged: %v", got.err, tc.err)
			}
		})
	}
	for typ, status := range map[errorType]int{errorBadData: 400, errorNotFound: 404, errorInternal: 500} {
		if s := typ.httpStatus(); s != status {
			t.Errorf("%s: status %d, want %d", typ, s, status)
		}
	}
}
