package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBackupRestore backs a running strata up to a bucket through its
// snapshot endpoint, restores the bucket into a new data directory and
// checks that a strata started there answers as the source does; a
// second backup of the same snapshot sends nothing.
func TestBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	s := &proc{t: t, bin: buildBinary(t), dir: t.TempDir(), addr: freeAddr(t), args: []string{"--storage.block-duration", "2m", "--web.enable-admin-api"}}
	s.start()
	for i, req := range e2eRequests() {
		if code, body := s.write(req); code != http.StatusNoContent {
			t.Fatalf("write %d: status %d: %s", i, code, body)
		}
	}
	bucketConf := filepath.Join(t.TempDir(), "bucket.yml")
	if err := os.WriteFile(bucketConf, []byte("type: FILESYSTEM\nconfig:\n  directory: "+t.TempDir()+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	tsdb := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := runTSDB(args, &out, &errOut); code != 0 {
			t.Fatalf("strata tsdb %q: exit %d\n%s", args, code, errOut.String())
		}
		return out.String()
	}
	tsdb("backup", "--objstore.config-file", bucketConf, "--snapshot.create-url", "http://"+s.addr, "--data-dir", s.dir, "--snapshot.keep", "--log.level", "warn")
	snaps, err := os.ReadDir(filepath.Join(s.dir, "snapshots"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots kept: %v, %v", snaps, err)
	}
	snap := filepath.Join(s.dir, "snapshots", snaps[0].Name())
	if out := tsdb("backup", "--objstore.config-file", bucketConf, "--snapshot", snap); !strings.Contains(out, " 0 sent (0 bytes), 0 of earlier backups deleted") {
		t.Errorf("second backup of the same snapshot: %s", out)
	}

	restored := filepath.Join(t.TempDir(), "data")
	tsdb("restore", "--objstore.config-file", bucketConf, "--data-dir", restored, "--log.level", "warn")
	r := &proc{t: t, bin: s.bin, dir: restored, addr: freeAddr(t)}
	r.start()
	end := e2eStart + (e2eSamples-1)*e2eInterval
	at := strconv.FormatFloat(float64(end)/1000, 'f', 3, 64)
	for _, q := range []struct {
		path   string
		params url.Values
	}{
		{"/api/v1/query", url.Values{"query": {"sum(http_requests_total)"}, "time": {at}}},
		{"/api/v1/query", url.Values{"query": {"count_over_time(http_requests_total[1h])"}, "time": {at}}},
		{"/api/v1/query", url.Values{"query": {"histogram_count(sum(rate(http_request_duration_seconds[5m])))"}, "time": {at}}},
		{"/api/v1/query_range", url.Values{"query": {"sum by (job) (rate(http_requests_total[1m]))"}, "start": {fmt.Sprint(e2eStart / 1000)}, "end": {at}, "step": {"15"}}},
		{"/api/v1/series", url.Values{"match[]": {`{__name__=~".+"}`}, "start": {"0"}, "end": {at}}},
		{"/api/v1/label/instance/values", nil},
	} {
		code, want := s.get(q.path, q.params)
		gotCode, got := r.get(q.path, q.params)
		if code != http.StatusOK || gotCode != code || !bytes.Equal(got, want) {
			t.Errorf("%s %v: restored answers %d %.300s, source %d %.300s", q.path, q.params, gotCode, got, code, want)
		}
	}

	// Without --snapshot.keep the snapshot made goes once backed up.
	if err := os.RemoveAll(snap); err != nil {
		t.Fatal(err)
	}
	tsdb("backup", "--objstore.config-file", bucketConf, "--snapshot.create-url", "http://"+s.addr, "--data-dir", s.dir, "--log.level", "warn")
	if snaps, err := os.ReadDir(filepath.Join(s.dir, "snapshots")); err != nil || len(snaps) != 0 {
		t.Errorf("snapshots left: %v, %v", snaps, err)
	}
	var errOut bytes.Buffer
	if code := runTSDB([]string{"backup", "--objstore.config-file", bucketConf}, &bytes.Buffer{}, &errOut); code != 1 || !strings.Contains(errOut.String(), "--snapshot") {
		t.Errorf("backup without a snapshot: exit %d, %s", code, errOut.String())
	}
}
