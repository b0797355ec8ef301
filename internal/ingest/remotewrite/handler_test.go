package remotewrite

import (
	"bytes"
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal/walfault"
)

func newTestHead(t testing.TB) *head.Head {
	t.Helper()
	opts := head.DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.Stripes = 16
	h, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func ts(lbls []string, samples ...prompb.Sample) prompb.TimeSeries {
	var ls []prompb.Label
	for i := 0; i < len(lbls); i += 2 {
		ls = append(ls, prompb.Label{Name: lbls[i], Value: lbls[i+1]})
	}
	return prompb.TimeSeries{Labels: ls, Samples: samples}
}

func encode(t *testing.T, req *prompb.WriteRequest) []byte {
	t.Helper()
	pb, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, pb)
}

func post(h http.Handler, body []byte, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	r.Header.Set("Content-Encoding", "snappy")
	r.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	for k, v := range header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// stored returns the number of samples of each series in the head.
func stored(t *testing.T, h *head.Head) map[string]int {
	t.Helper()
	q, _ := h.Querier(math.MinInt64, math.MaxInt64)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	out := map[string]int{}
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() == promchunkenc.ValFloat {
			out[ss.At().Labels().String()]++
		}
	}
	return out
}

func TestWriteResponses(t *testing.T) {
	good := ts([]string{"__name__", "good", "job", "a"}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 2000, Value: 2})
	cases := []struct {
		name     string
		body     func(t *testing.T) []byte
		header   map[string]string
		opts     func(*Options)
		code     int
		bodyHas  string
		wantGood int // samples of the "good" series stored afterwards
	}{
		{
			name: "valid", code: http.StatusNoContent, wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "no content type is 1.0", code: http.StatusNoContent, wantGood: 2,
			header: map[string]string{"Content-Type": ""},
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "explicit 1.0 proto", code: http.StatusNoContent, wantGood: 2,
			header: map[string]string{"Content-Type": "application/x-protobuf;proto=prometheus.WriteRequest"},
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "not snappy", code: http.StatusBadRequest, bodyHas: "snappy",
			body: func(*testing.T) []byte { return []byte("\xff\xff\xff\xff\xffnot snappy") },
		},
		{
			name: "not protobuf", code: http.StatusBadRequest, bodyHas: "protobuf",
			body: func(*testing.T) []byte { return snappy.Encode(nil, []byte("\x0a\xff\xff\xff\xff\x0fgarbage")) },
		},
		{
			name: "json content type", code: http.StatusUnsupportedMediaType, bodyHas: "Content-Type",
			header: map[string]string{"Content-Type": "application/json"},
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "unknown proto", code: http.StatusUnsupportedMediaType, bodyHas: "unknown",
			header: map[string]string{"Content-Type": "application/x-protobuf;proto=foo.Bar"},
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "gzip encoding", code: http.StatusUnsupportedMediaType, bodyHas: "Content-Encoding",
			header: map[string]string{"Content-Encoding": "gzip"},
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "body too large", code: http.StatusRequestEntityTooLarge, bodyHas: "limit",
			opts: func(o *Options) { o.MaxBodyBytes = 10 },
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "decoded too large", code: http.StatusRequestEntityTooLarge, bodyHas: "decoded",
			opts: func(o *Options) { o.MaxDecodedBytes = 10 },
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
			},
		},
		{
			name: "no metric name, rest kept", code: http.StatusBadRequest, bodyHas: "no metric name", wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					ts([]string{"job", "a"}, prompb.Sample{Timestamp: 1, Value: 1}), good}})
			},
		},
		{
			name: "empty label name, rest kept", code: http.StatusBadRequest, bodyHas: "empty label name", wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					good, ts([]string{"__name__", "x", "", "a"}, prompb.Sample{Timestamp: 1, Value: 1})}})
			},
		},
		{
			name: "duplicate label name, rest kept", code: http.StatusBadRequest, bodyHas: "duplicate label name", wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					good, ts([]string{"__name__", "x", "a", "1", "a", "2"}, prompb.Sample{Timestamp: 1, Value: 1})}})
			},
		},
		{
			name: "out of order, rest kept", code: http.StatusBadRequest, bodyHas: "out of order sample", wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					good, ts([]string{"__name__", "x"}, prompb.Sample{Timestamp: 5, Value: 1}, prompb.Sample{Timestamp: 4, Value: 1})}})
			},
		},
		{
			name: "same timestamp other value, rest kept", code: http.StatusBadRequest, bodyHas: "duplicate sample for timestamp", wantGood: 2,
			body: func(t *testing.T) []byte {
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					ts([]string{"__name__", "x"}, prompb.Sample{Timestamp: 5, Value: 1}, prompb.Sample{Timestamp: 5, Value: 2}), good}})
			},
		},
		{
			name: "exact duplicate accepted", code: http.StatusNoContent, wantGood: 2,
			body: func(t *testing.T) []byte {
				dup := ts([]string{"__name__", "good", "job", "a"}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 1000, Value: 1}, prompb.Sample{Timestamp: 2000, Value: 2})
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{dup}})
			},
		},
		{
			name: "native histogram refused, floats kept", code: http.StatusBadRequest, bodyHas: "native histograms", wantGood: 2,
			body: func(t *testing.T) []byte {
				h := ts([]string{"__name__", "h"})
				h.Histograms = []prompb.Histogram{{Timestamp: 1, Schema: 0, ZeroThreshold: 1e-128}}
				return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good, h}})
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hd := newTestHead(t)
			opts := DefaultOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			w := post(NewHandler(hd, opts), c.body(t), c.header)
			if w.Code != c.code {
				t.Fatalf("status %d, want %d; body %q", w.Code, c.code, w.Body.String())
			}
			if !strings.Contains(w.Body.String(), c.bodyHas) {
				t.Fatalf("body %q does not mention %q", w.Body.String(), c.bodyHas)
			}
			got := stored(t, hd)[`{__name__="good", job="a"}`]
			if got != c.wantGood {
				t.Fatalf("good series has %d samples stored, want %d (stored: %v)", got, c.wantGood, stored(t, hd))
			}
		})
	}
}

// notReady is a store that is still replaying.
type notReady struct{}

func (notReady) Appender(context.Context) storage.Appender { return notReadyApp{} }

type notReadyApp struct{}

func (notReadyApp) Append(storage.SeriesRef, labels.Labels, storage.Sample) (storage.SeriesRef, error) {
	return 0, storage.ErrNotReady
}
func (notReadyApp) Commit() error   { return storage.ErrNotReady }
func (notReadyApp) Rollback() error { return nil }

func TestWriteNotReadyIsRetryable(t *testing.T) {
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts([]string{"__name__", "m"}, prompb.Sample{Timestamp: 1, Value: 1})}})
	w := post(NewHandler(notReady{}, DefaultOptions()), body, nil)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; body %q", w.Code, w.Body.String())
	}
}

// TestEmptyLabelValuesDropped checks that a label with an empty value is
// the same series as one without the label.
func TestEmptyLabelValuesDropped(t *testing.T) {
	hd := newTestHead(t)
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"__name__", "m", "a", ""}, prompb.Sample{Timestamp: 1, Value: 1}),
		ts([]string{"__name__", "m"}, prompb.Sample{Timestamp: 2, Value: 2}),
	}})
	if w := post(NewHandler(hd, DefaultOptions()), body, nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := stored(t, hd); len(got) != 1 || got[`{__name__="m"}`] != 2 {
		t.Fatalf("stored %v", got)
	}
}

// TestUnsortedLabels checks that labels sent out of order make the same
// series as sorted ones.
func TestUnsortedLabels(t *testing.T) {
	hd := newTestHead(t)
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"job", "j", "__name__", "m"}, prompb.Sample{Timestamp: 1, Value: 1}),
		ts([]string{"__name__", "m", "job", "j"}, prompb.Sample{Timestamp: 2, Value: 2}),
	}})
	if w := post(NewHandler(hd, DefaultOptions()), body, nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := stored(t, hd); got[`{__name__="m", job="j"}`] != 2 {
		t.Fatalf("stored %v", got)
	}
}

// TestDiskFull checks that a write the WAL cannot take gets a retryable
// 500, stores nothing, and that writes succeed again once space returns,
// with exactly the acknowledged samples surviving a restart.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	faults := walfault.New(nil)
	opts := head.DefaultOptions()
	opts.WALDir = dir
	opts.Stripes = 16
	opts.WAL.FS = faults
	opts.CheckpointOnClose = false
	hd, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(hd, DefaultOptions())
	req := func(ts int64) []byte {
		return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "new_during_outage"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
		}})
	}
	if w := post(h, req(1), nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}

	faults.FailWritesPartially(syscall.ENOSPC)
	for _, ts := range []int64{2, 3} {
		w := post(h, req(ts), nil)
		if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "no space left") {
			t.Fatalf("disk full: status %d, body %q; want 500 naming the cause", w.Code, w.Body.String())
		}
	}
	if got := stored(t, hd); got[`{__name__="m"}`] != 1 || len(got) != 2 {
		t.Fatalf("samples of failed writes are visible: %v", got)
	}

	faults.Heal()
	if w := post(h, req(4), nil); w.Code != http.StatusNoContent {
		t.Fatalf("after space returned: status %d: %s", w.Code, w.Body.String())
	}
	want := map[string]int{`{__name__="m"}`: 2, `{__name__="new_during_outage"}`: 2}
	if got := stored(t, hd); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	if err := hd.Close(); err != nil {
		t.Fatal(err)
	}
	opts.WAL.FS = nil
	hd2, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer hd2.Close()
	if got := stored(t, hd2); !maps.Equal(got, want) {
		t.Fatalf("after restart stored %v, want %v", got, want)
	}
}
