package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// fakeAdmin records the deletes it is asked for.
type fakeAdmin struct {
	deletes []string
	cleaned int
	err     error
}

func (f *fakeAdmin) Delete(_ context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	f.deletes = append(f.deletes, fmt.Sprintf("%d %d %v", mint, maxt, ms))
	return f.err
}

func (f *fakeAdmin) CleanTombstones(context.Context) error {
	f.cleaned++
	return f.err
}

func (f *fakeAdmin) Snapshot(skipHead bool) (string, error) {
	return fmt.Sprintf("20261208T031500Z-0123456789abcdef-%v", skipHead), f.err
}

func TestAdminEndpoints(t *testing.T) {
	// Without an Admin, as Prometheus without --web.enable-admin-api.
	h := newTestAPI(&fakeStorage{}, nil)
	for _, path := range []string{"/api/v1/admin/tsdb/delete_series?match[]=up", "/api/v1/admin/tsdb/clean_tombstones", "/api/v1/admin/tsdb/snapshot"} {
		rec := do(h, http.MethodPost, path, "")
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"errorType":"unavailable","error":"admin APIs disabled"`) {
			t.Errorf("POST %s, admin disabled: %d %s", path, rec.Code, rec.Body)
		}
	}

	admin := &fakeAdmin{}
	h = newTestAPI(&fakeStorage{}, func(o *Options) { o.Admin = admin })
	for _, tc := range []struct {
		method, target, form string
		status               int
		want                 string // the delete asked for, or the error
	}{
		{http.MethodPost, "/api/v1/admin/tsdb/delete_series", "match[]=up{job=\"a\"}&match[]=down", http.StatusNoContent, ""},
		{http.MethodPut, "/api/v1/admin/tsdb/delete_series?match[]=up&start=10&end=20.5", "", http.StatusNoContent, "10000 20500 [__name__=\"up\"]"},
		{http.MethodPost, "/api/v1/admin/tsdb/delete_series", "", http.StatusBadRequest, "no match[] parameter provided"},
		{http.MethodPost, "/api/v1/admin/tsdb/delete_series", "match[]={job=~\".*\"}", http.StatusBadRequest, "at least one non-empty matcher"},
		{http.MethodPost, "/api/v1/admin/tsdb/delete_series", "match[]=up&start=x", http.StatusBadRequest, "invalid parameter \\\"start\\\""},
		{http.MethodPost, "/api/v1/admin/tsdb/delete_series", "match[]=up&start=20&end=10", http.StatusBadRequest, "end timestamp must not be before start time"},
		{http.MethodGet, "/api/v1/admin/tsdb/delete_series?match[]=up", "", http.StatusMethodNotAllowed, ""},
	} {
		admin.deletes = nil
		rec := do(h, tc.method, tc.target, tc.form)
		if rec.Code != tc.status {
			t.Errorf("%s %s %s: status %d %s, want %d", tc.method, tc.target, tc.form, rec.Code, rec.Body, tc.status)
			continue
		}
		switch {
		case tc.status == http.StatusNoContent:
			if rec.Body.Len() != 0 {
				t.Errorf("%s %s: body %q with 204", tc.method, tc.target, rec.Body)
			}
			if tc.method == http.MethodPost {
				// The default range: all of time, as Prometheus' minTime and maxTime give it.
				if len(admin.deletes) != 2 || !strings.HasSuffix(admin.deletes[0], `[job="a" __name__="up"]`) || !strings.HasSuffix(admin.deletes[1], `[__name__="down"]`) {
					t.Errorf("deletes %q", admin.deletes)
				}
				if f := strings.Fields(admin.deletes[0]); f[0] != fmt.Sprint(minTime.UnixMilli()) || f[1] != fmt.Sprint(maxTime.UnixMilli()) {
					t.Errorf("default range %s %s, want %d %d", f[0], f[1], minTime.UnixMilli(), maxTime.UnixMilli())
				}
			} else if strings.Join(admin.deletes, "|") != tc.want {
				t.Errorf("deletes %q, want %q", admin.deletes, tc.want)
			}
		case tc.want != "":
			if !strings.Contains(rec.Body.String(), tc.want) || len(admin.deletes) != 0 {
				t.Errorf("%s %s %s: %s, deletes %q; want an error with %q and no delete", tc.method, tc.target, tc.form, rec.Body, admin.deletes, tc.want)
			}
		}
	}
	if rec := do(h, http.MethodPost, "/api/v1/admin/tsdb/clean_tombstones", ""); rec.Code != http.StatusNoContent || admin.cleaned != 1 {
		t.Errorf("clean_tombstones: %d %s, cleaned %d times", rec.Code, rec.Body, admin.cleaned)
	}
	for q, want := range map[string]string{"": "false", "?skip_head=true": "true"} {
		rec := do(h, http.MethodPost, "/api/v1/admin/tsdb/snapshot"+q, "")
		if body := `{"status":"success","data":{"name":"20261208T031500Z-0123456789abcdef-` + want + `"}}`; rec.Code != http.StatusOK || rec.Body.String() != body {
			t.Errorf("snapshot%s: %d %s, want 200 %s", q, rec.Code, rec.Body, body)
		}
	}
	if rec := do(h, http.MethodPost, "/api/v1/admin/tsdb/snapshot?skip_head=maybe", ""); rec.Code != http.StatusBadRequest {
		t.Errorf("snapshot?skip_head=maybe: %d %s, want 400", rec.Code, rec.Body)
	}
	admin.err = errors.New("disk full")
	if rec := do(h, http.MethodPost, "/api/v1/admin/tsdb/delete_series", "match[]=up"); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "disk full") {
		t.Errorf("failed delete: %d %s", rec.Code, rec.Body)
	}
}
