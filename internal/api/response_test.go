package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/util/annotations"
)

func TestAnnotationStrings(t *testing.T) {
	warn := func(s string) error { return errors.New(s) }
	info := func(s string) error { return fmt.Errorf("%w: %s", annotations.PromQLInfo, s) }
	for _, tc := range []struct {
		name                string
		add                 []error
		wantWarns, wantInfo []string
	}{
		{name: "none"},
		{
			name:      "split_and_sorted",
			add:       []error{warn("w2"), info("i2"), warn("w1"), info("i1"), warn("w1")},
			wantWarns: []string{"w1", "w2"},
			wantInfo:  []string{"PromQL info: i1", "PromQL info: i2"},
		},
		{
			name: "capped",
			add: []error{
				warn("w00"), warn("w01"), warn("w02"), warn("w03"), warn("w04"), warn("w05"),
				warn("w06"), warn("w07"), warn("w08"), warn("w09"), warn("w10"), warn("w11"),
				info("i00"), info("i01"), info("i02"), info("i03"), info("i04"), info("i05"),
				info("i06"), info("i07"), info("i08"), info("i09"), info("i10"),
			},
			wantWarns: []string{
				"w00", "w01", "w02", "w03", "w04", "w05", "w06", "w07", "w08", "w09",
				"2 more warning annotations omitted",
			},
			wantInfo: []string{
				"PromQL info: i00", "PromQL info: i01", "PromQL info: i02", "PromQL info: i03",
				"PromQL info: i04", "PromQL info: i05", "PromQL info: i06", "PromQL info: i07",
				"PromQL info: i08", "PromQL info: i09", "1 more info annotations omitted",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a annotations.Annotations
			for _, err := range tc.add {
				a.Add(err)
			}
			warns, infos := annotationStrings(a, "")
			if len(warns) != 0 || len(tc.wantWarns) != 0 {
				if !reflect.DeepEqual(warns, tc.wantWarns) {
					t.Errorf("warnings %q, want %q", warns, tc.wantWarns)
				}
			}
			if len(infos) != 0 || len(tc.wantInfo) != 0 {
				if !reflect.DeepEqual(infos, tc.wantInfo) {
					t.Errorf("infos %q, want %q", infos, tc.wantInfo)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that drops the body.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkWriteAnswer writes dayAnswer's matrix to a client that
// accepts no compression, gzip or zstd, compressed as the server
// compresses (internal/server's responseCompression).
func BenchmarkWriteAnswer(b *testing.B) {
	mat := dayAnswer()
	a := &API{logger: slog.New(slog.DiscardHandler)}
	wrap, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil {
		b.Fatal(err)
	}
	h := wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.writeSuccess(w, r, &queryData{value: mat}, nil, "")
	}))
	for _, enc := range []string{"identity", "gzip", "zstd"} {
		b.Run("encoding="+enc, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Accept-Encoding", enc)
			for b.Loop() {
				h.ServeHTTP(&discardWriter{h: http.Header{}}, r)
			}
		})
	}
}
