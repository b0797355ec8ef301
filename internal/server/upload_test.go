package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/thanos-io/thanos/pkg/info/infopb"
	"github.com/thanos-io/thanos/pkg/store/storepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-db/strata/internal/storeapi"
)

// TestUploadsBlocks runs a server with a bucket on the local file system
// (objstore's FILESYSTEM provider), writes four hours of samples, and
// waits for the block the head writes to appear in the bucket whole, with
// the server's external labels in its meta.json.
func TestUploadsBlocks(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(t.TempDir(), "bucket.yml")
	if err := os.WriteFile(conf, []byte("type: FILESYSTEM\nconfig:\n  directory: "+dir+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	external := labels.FromStrings("cluster", "eu-1", "replica", "a")
	base := startServer(t, func(c *Config) {
		c.ObjstoreConfigFile = conf
		c.ExternalLabels = external
	})
	writeHours(t, base, 4)

	var meta struct {
		ULID    string `json:"ulid"`
		MinTime int64  `json:"minTime"`
		Stats   struct {
			Samples int `json:"numSamples"`
		} `json:"stats"`
		Thanos struct {
			Labels map[string]string `json:"labels"`
			Source string            `json:"source"`
			Files  []struct {
				RelPath   string `json:"rel_path"`
				SizeBytes int64  `json:"size_bytes"`
			} `json:"files"`
		} `json:"thanos"`
	}
	if err := json.Unmarshal(waitForBlock(t, dir), &meta); err != nil {
		t.Fatal(err)
	}
	if got := labels.FromMap(meta.Thanos.Labels); !labels.Equal(got, external) || meta.Thanos.Source != "strata" {
		t.Errorf("thanos section: labels %s, source %q", got, meta.Thanos.Source)
	}
	if meta.Stats.Samples == 0 || len(meta.Thanos.Files) < 2 {
		t.Errorf("meta.json %+v", meta)
	}
	for _, f := range meta.Thanos.Files {
		info, err := os.Stat(filepath.Join(dir, meta.ULID, f.RelPath))
		if err != nil || info.Size() != f.SizeBytes {
			t.Errorf("file %s of %d bytes: %v", f.RelPath, f.SizeBytes, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, body := get(t, base+"/metrics")
		if m := regexp.MustCompile(`(?m)^strata_shipper_uploads_total (\d+)$`).FindSubmatch(body); m != nil && string(m[1]) != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upload not counted on /metrics:\n%s", regexp.MustCompile(`(?m)^strata_shipper.*$`).FindAll(body, -1))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeHours remote-writes a sample a minute of one series over the last
// hours, enough for the head to write a block.
func writeHours(t *testing.T, base string, hours int) {
	t.Helper()
	now := time.Now().UnixMilli()
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}}}
	for at := now - int64(hours)*time.Hour.Milliseconds(); at <= now; at += 60_000 {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: at, Value: 1})
	}
	remoteWrite(t, base, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
}

// waitForBlock waits for a block in the bucket directory dir and returns
// its meta.json.
func waitForBlock(t *testing.T, dir string) []byte {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json")); len(metas) > 0 {
			b, err := os.ReadFile(metas[0])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if time.Now().After(deadline) {
			t.Fatal("no block in the bucket after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStoreServesUploads runs a node that uploads to a bucket and a
// store over the bucket: the store answers a query over the block's
// range as the node does, its series with the node's external labels,
// and advertises them over the StoreAPI.
func TestStoreServesUploads(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(t.TempDir(), "bucket.yml")
	if err := os.WriteFile(conf, []byte("type: FILESYSTEM\nconfig:\n  directory: "+dir+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	external := labels.FromStrings("cluster", "eu-1", "replica", "a")
	node := startServer(t, func(c *Config) {
		c.ObjstoreConfigFile = conf
		c.ExternalLabels = external
	})
	writeHours(t, node, 4)
	var meta struct {
		MaxTime int64 `json:"maxTime"`
	}
	if err := json.Unmarshal(waitForBlock(t, dir), &meta); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultStoreConfig()
	cfg.ObjstoreConfigFile, cfg.DataDir = conf, t.TempDir()
	cfg.ListenAddress, cfg.StoreAPIAddress = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- RunStore(ctx, cfg, func(h, g net.Addr) { addrs <- [2]net.Addr{h, g} }) }()
	var a [2]net.Addr
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("store: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("store: %v", err)
		}
	})
	store := "http://" + a[0].String()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if code, _ := get(t, store+"/-/ready"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("store not ready after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	query := url.Values{"query": {"count_over_time(up[2h])"}, "time": {strconv.FormatFloat(float64(meta.MaxTime)/1000, 'f', 3, 64)}}.Encode()
	type answer struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	var fromNode, fromStore answer
	for base, ans := range map[string]*answer{node: &fromNode, store: &fromStore} {
		code, body := get(t, base+"/api/v1/query?"+query)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", base, code, body)
		}
		if err := json.Unmarshal(body, ans); err != nil {
			t.Fatal(err)
		}
	}
	if len(fromNode.Data.Result) != 1 || len(fromStore.Data.Result) != 1 || fromNode.Data.Result[0].Value[1] != fromStore.Data.Result[0].Value[1] {
		t.Fatalf("node answers %+v, store %+v", fromNode.Data.Result, fromStore.Data.Result)
	}
	if got := labels.FromMap(fromStore.Data.Result[0].Metric); !labels.Equal(got, labels.FromStrings("cluster", "eu-1", "job", "node", "replica", "a")) {
		t.Errorf("store's series %s", got)
	}

	conn, err := grpc.NewClient(a[1].String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(storeapi.Codec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	info, err := infopb.NewInfoClient(conn).Info(ctx, &infopb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var sets []labels.Labels
	for _, set := range info.LabelSets {
		b := labels.NewScratchBuilder(len(set.Labels))
		for _, l := range set.Labels {
			b.Add(l.Name, l.Value)
		}
		sets = append(sets, b.Labels())
	}
	// The node may have uploaded more blocks by the store's sync: Info
	// ends where the newest of them does.
	ends := map[int64]bool{}
	all, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	for _, name := range all {
		var m struct {
			MaxTime int64 `json:"maxTime"`
		}
		if b, err := os.ReadFile(name); err == nil && json.Unmarshal(b, &m) == nil {
			ends[m.MaxTime] = true
		}
	}
	if len(sets) != 1 || !labels.Equal(sets[0], external) || info.ComponentType != "store" || info.Store.MaxTime < meta.MaxTime || !ends[info.Store.MaxTime] {
		t.Errorf("Info: label sets %v, %+v; blocks end at %v", sets, info, ends)
	}

	// Series over the two hours the query counted sends the same
	// samples, through the cache of encoded chunks: the second time
	// every stored chunk is found in it.
	count := func() int {
		t.Helper()
		mint, maxt := meta.MaxTime-2*3600_000+1, meta.MaxTime
		stream, err := storepb.NewStoreClient(conn).Series(ctx, &storepb.SeriesRequest{MinTime: mint, MaxTime: maxt,
			Matchers: []storepb.LabelMatcher{{Type: storepb.LabelMatcher_EQ, Name: "__name__", Value: "up"}}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			s := resp.GetSeries()
			if s == nil {
				continue
			}
			for _, c := range s.Chunks {
				chk, err := chunkenc.FromData(chunkenc.Encoding(c.Raw.Type+1), c.Raw.Data)
				if err != nil {
					t.Fatal(err)
				}
				it := chk.Iterator(nil)
				for it.Next() != chunkenc.ValNone {
					if ts := it.AtT(); ts >= mint && ts <= maxt {
						n++
					}
				}
			}
		}
	}
	want := fromStore.Data.Result[0].Value[1]
	for i := range 2 {
		if got := strconv.Itoa(count()); got != want {
			t.Fatalf("Series %d: %s samples of up, the query counts %s", i, got, want)
		}
	}
	_, body := get(t, store+"/metrics")
	hits := regexp.MustCompile(`(?m)^strata_store_encoded_chunk_hits_total (\d+)`).FindSubmatch(body)
	misses := regexp.MustCompile(`(?m)^strata_store_encoded_chunk_misses_total (\d+)`).FindSubmatch(body)
	if hits == nil || misses == nil || string(hits[1]) == "0" || string(hits[1]) != string(misses[1]) {
		t.Errorf("encoded cache: hits %q, misses %q; want as many hits as misses", hits, misses)
	}
}

// TestObjstoreConfigRefused checks that a bad bucket configuration stops
// the server at start with a message naming the file.
func TestObjstoreConfigRefused(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "bucket.yml")
	if err := os.WriteFile(conf, []byte("type: NOSUCH\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ListenAddress, cfg.DataDir, cfg.ObjstoreConfigFile = "127.0.0.1:0", t.TempDir(), conf
	err := Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), conf) || !strings.Contains(err.Error(), "NOSUCH") {
		t.Errorf("Run with a bad bucket configuration: %v", err)
	}
}

// TestCompactBucket runs a node that uploads 10-minute blocks and then
// one pass of the compactor over its bucket: the node's blocks are merged
// into one, the sources marked for deletion, the oldest beyond
// the retention marked, and nothing deleted before the delay.
func TestCompactBucket(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(t.TempDir(), "bucket.yml")
	if err := os.WriteFile(conf, []byte("type: FILESYSTEM\nconfig:\n  directory: "+dir+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	node := startServer(t, func(c *Config) {
		c.ObjstoreConfigFile = conf
		c.BlockDuration = 10 * time.Minute
	})
	writeHours(t, node, 2)
	// Blocks over the first 100 minutes or so: wait for the tenth.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json")); len(metas) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fewer than ten blocks in the bucket after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))

	cfg := DefaultCompactConfig()
	cfg.ObjstoreConfigFile, cfg.DataDir, cfg.Retention, cfg.MaxBlockDuration = conf, t.TempDir(), 90*time.Minute, 6*time.Hour
	if err := RunCompact(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	merged, expired := 0, 0
	for _, name := range metas {
		var m struct {
			Level   int      `json:"level"`
			Sources []string `json:"sources"`
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Level == 1 {
			continue
		}
		merged++
		if len(m.Sources) < 2 {
			t.Errorf("merged block %s with sources %v", name, m.Sources)
		}
		for _, id := range m.Sources {
			if _, err := os.Stat(filepath.Join(dir, id, "deletion-mark.json")); err != nil {
				t.Errorf("source %s of a merge not marked: %v", id, err)
			}
		}
	}
	marks, _ := filepath.Glob(filepath.Join(dir, "*", "deletion-mark.json"))
	for _, name := range marks {
		if b, _ := os.ReadFile(name); strings.Contains(string(b), "retention") {
			expired++
		}
	}
	for _, name := range before {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("block deleted before the delay: %v", err)
		}
	}
	if merged == 0 || expired == 0 {
		t.Errorf("%d blocks before, %d after: %d merged, %d marked, %d of them beyond the retention", len(before), len(metas), merged, len(marks), expired)
	}
}
