package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/prompb"
)

// TestResponseCompression checks that the API's and the UI's responses
// are compressed with the codec the client accepts, decompress to the
// uncompressed answer, and are sent as they are when the client accepts
// neither codec, when they are small, or when compression is turned off.
func TestResponseCompression(t *testing.T) {
	decoders := map[string]func([]byte) ([]byte, error){
		"gzip": func(b []byte) ([]byte, error) {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return io.ReadAll(zr)
		},
		"zstd": func(b []byte) ([]byte, error) {
			zr, err := zstd.NewReader(nil)
			if err != nil {
				return nil, err
			}
			defer zr.Close()
			return zr.DecodeAll(b, nil)
		},
	}
	for _, enabled := range []bool{true, false} {
		t.Run("enabled="+strconv.FormatBool(enabled), func(t *testing.T) {
			base := startServer(t, func(c *Config) { c.ResponseCompression = enabled })
			t0 := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
			req := &prompb.WriteRequest{}
			for s := range 20 {
				ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "bytes_total"}, {Name: "pod", Value: strconv.Itoa(s)}}}
				for i := range 120 {
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(i)*15000, Value: float64(i * s * 1000)})
				}
				req.Timeseries = append(req.Timeseries, ts)
			}
			remoteWrite(t, base, req)

			// A client that decompresses nothing itself, to see what is sent.
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			fetch := func(path, accept string) (encoding string, body []byte) {
				t.Helper()
				hr, _ := http.NewRequest(http.MethodGet, base+path, nil)
				if accept != "" {
					hr.Header.Set("Accept-Encoding", accept)
				}
				resp, err := client.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if body, err = io.ReadAll(resp.Body); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d: %s", path, resp.StatusCode, body)
				}
				return resp.Header.Get("Content-Encoding"), body
			}

			query := "/api/v1/query_range?" + url.Values{
				"query": {"rate(bytes_total[5m])"}, "start": {fmtSec(t0)}, "end": {fmtSec(t0 + 119*15000)}, "step": {"15"},
			}.Encode()
			for _, path := range []string{query, "/static/app.js"} {
				enc, plain := fetch(path, "")
				if enc != "" || len(plain) < 4096 {
					t.Fatalf("%s without Accept-Encoding: encoding %q, %d bytes", path, enc, len(plain))
				}
				for _, accept := range []string{"gzip", "zstd", "gzip, deflate, br, zstd", "identity"} {
					enc, body := fetch(path, accept)
					want := map[string]string{"gzip": "gzip", "zstd": "zstd", "gzip, deflate, br, zstd": "zstd"}[accept]
					if !enabled {
						want = ""
					}
					if enc != want {
						t.Fatalf("%s, Accept-Encoding %q: encoding %q, want %q", path, accept, enc, want)
					}
					if enc != "" {
						if len(body) > len(plain)/2 {
							t.Errorf("%s, %s: %d bytes of %d", path, enc, len(body), len(plain))
						}
						var err error
						if body, err = decoders[enc](body); err != nil {
							t.Fatalf("%s, %s: %v", path, enc, err)
						}
					}
					if !bytes.Equal(body, plain) {
						t.Errorf("%s, Accept-Encoding %q: the answer differs from the uncompressed one", path, accept)
					}
				}
			}
			// An answer under 1 KiB goes as it is.
			if enc, _ := fetch("/api/v1/query?query=1", "gzip"); enc != "" {
				t.Errorf("a small answer was compressed (%s)", enc)
			}
		})
	}
}
