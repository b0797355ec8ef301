package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateBlocksFrom backfills three hours of two series from an
// OpenMetrics file and two more from JSON lines, starts strata on the
// blocks and checks what it answers.
func TestCreateBlocksFrom(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	const start, n = 1_700_000_000, 720 // 15 s apart
	dir, in := t.TempDir(), t.TempDir()
	var om, jsonl strings.Builder
	om.WriteString("# HELP temp A temperature.\n# TYPE temp gauge\n")
	for _, room := range []string{"a", "b"} {
		ts, vs := []int64{}, []float64{}
		for i := range n {
			fmt.Fprintf(&om, "temp{room=%q} %d %d\n", room, i, start+15*i)
			ts, vs = append(ts, int64(start+15*i)*1000), append(vs, float64(2*i))
		}
		line, _ := json.Marshal(map[string]any{"metric": map[string]string{"__name__": "hum", "room": room}, "values": vs, "timestamps": ts})
		jsonl.Write(append(line, '\n'))
	}
	om.WriteString("# EOF\n")
	omFile, jsonlFile := filepath.Join(in, "in.om"), filepath.Join(in, "in.jsonl")
	for f, s := range map[string]string{omFile: om.String(), jsonlFile: jsonl.String()} {
		if err := os.WriteFile(f, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"openmetrics", omFile, dir}, {"jsonl", jsonlFile, dir}} {
		var out, errOut bytes.Buffer
		if code := runTSDB(append([]string{"create-blocks-from", args[0], "--log.level", "warn"}, args[1:]...), &out, &errOut); code != 0 {
			t.Fatalf("create-blocks-from %s: exit %d\n%s", args[0], code, errOut.String())
		}
		// 3 h from 22:13:20 cut into 2 h blocks at 22:00, 00:00.
		if !strings.Contains(out.String(), "2 blocks written") {
			t.Errorf("create-blocks-from %s: %s", args[0], out.String())
		}
	}
	s := &proc{t: t, bin: buildBinary(t), dir: dir, addr: freeAddr(t)}
	s.start()
	at := fmt.Sprint(start + 15*(n-1))
	for q, want := range map[string]string{
		"sum(count_over_time(temp[4h]))": fmt.Sprint(2 * n),
		"sum(count_over_time(hum[4h]))":  fmt.Sprint(2 * n),
		`temp{room="b"}`:                 fmt.Sprint(n - 1),
		`sum(hum)`:                       fmt.Sprint(4 * (n - 1)),
	} {
		code, body := s.get("/api/v1/query", url.Values{"query": {q}, "time": {at}})
		if code != http.StatusOK || !strings.Contains(string(body), `"`+want+`"]`) {
			t.Errorf("%s: %d %s, want %s", q, code, body, want)
		}
	}

	var errOut bytes.Buffer
	bad := filepath.Join(in, "bad.om")
	os.WriteFile(bad, []byte("temp 1\n# EOF\n"), 0o666)
	if code := runTSDB([]string{"create-blocks-from", "openmetrics", bad, t.TempDir()}, &bytes.Buffer{}, &errOut); code != 1 || !strings.Contains(errOut.String(), "no timestamp") {
		t.Errorf("a sample without a timestamp: exit %d, %s", code, errOut.String())
	}
}
