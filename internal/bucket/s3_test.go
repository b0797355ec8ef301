package bucket

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/vfs"
)

// versitygwModule is the S3-compatible server the test runs, as .ci/run
// installs it.
const versitygwModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// s3Server is versitygw serving a directory over S3 on a loopback port.
type s3Server struct {
	t          *testing.T
	bin, root  string
	addr       string
	cmd        *exec.Cmd
	configFile string
}

func startS3(t *testing.T) *s3Server {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		t.Skipf("versitygw is not on PATH; go install %s runs this test against a real S3 server", versitygwModule)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &s3Server{t: t, bin: bin, root: t.TempDir(), addr: addr, configFile: filepath.Join(t.TempDir(), "bucket.yml")}
	if err := os.Mkdir(filepath.Join(s.root, "strata"), 0o777); err != nil {
		t.Fatal(err)
	}
	conf := "type: S3\nconfig:\n  bucket: strata\n  endpoint: " + addr + "\n  access_key: strata\n  secret_key: strata-secret\n  insecure: true\n"
	if err := os.WriteFile(s.configFile, []byte(conf), 0o666); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *s3Server) start() {
	s.cmd = exec.Command(s.bin, "--port", s.addr, "--access", "strata", "--secret", "strata-secret", "posix", s.root)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal("versitygw did not listen within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *s3Server) stop() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// TestShipperS3 uploads blocks to a real S3 server through objstore's S3
// client, configured by a Thanos bucket file: the blocks read back whole;
// while the server is down an upload fails and nothing of it shows as a
// block; once it is back the next pass uploads it.
func TestShipperS3(t *testing.T) {
	srv := startS3(t)
	bkt, err := Open(srv.configFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer bkt.Close()
	dir := t.TempDir()
	fs := vfs.OS{}
	a, b := writeBlockIn(t, fs, dir, 0, 1, nil), writeBlockIn(t, fs, dir, 1000, 1, nil)
	blocks := &blockList{}
	blocks.set(a, b)
	s := newTestShipperIn(fs, dir, bkt, blocks, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := checkBucketIn(t, fs, dir, bkt), ids(a, b); !slices.Equal(got, want) {
		t.Fatalf("blocks in the bucket %v, want %v", got, want)
	}

	srv.stop()
	c := writeBlockIn(t, fs, dir, 2000, 1, nil)
	blocks.set(a, b, c)
	short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
	defer cancelShort()
	if err := s.Sync(short); err == nil {
		t.Fatal("upload to a stopped server succeeded")
	}
	srv.start()
	if got, want := checkBucketIn(t, fs, dir, bkt), ids(a, b); !slices.Equal(got, want) {
		t.Fatalf("blocks in the bucket after a failed upload %v, want %v", got, want)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := checkBucketIn(t, fs, dir, bkt), ids(a, b, c); !slices.Equal(got, want) {
		t.Fatalf("blocks in the bucket %v, want %v", got, want)
	}
	if !s.Shipped(c) {
		t.Error("block not recorded as shipped")
	}
}

// TestCompactorS3 compacts blocks on a real S3 server and reads them
// through a Store: the recursive listings, range requests and deletions
// as S3 answers them.
func TestCompactorS3(t *testing.T) {
	srv := startS3(t)
	bkt, err := Open(srv.configFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer bkt.Close()
	ext := labels.FromStrings("replica", "a")
	src := uploadAs(t, bkt, ext, 0, 1000, 2000, 3000)
	store := newTestStore(t, bkt, t.TempDir())
	want := allSamples(t, store)

	now := time.Now()
	c := newTestCompactor(t, bkt, &now, 0)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks, marked := bucketBlocks(t, bkt)
	if len(blocks) != 5 || !slices.Equal(sortIDs(marked), ids(src[:3]...)) {
		t.Fatalf("%d blocks, marked %v; want 5, the three sources marked", len(blocks), marked)
	}
	if err := store.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := served(store); len(got) != 2 || slices.Contains(got, src[0].ULID) {
		t.Errorf("store serves %v: want the merge and the newest block", got)
	}
	if got := allSamples(t, store); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("after the merge the store reads %d series, not %d", len(got), len(want))
	}
	now = now.Add(49 * time.Hour)
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, m := range src[:3] {
		if objs, err := c.objects(context.Background(), m.ULID); err != nil || len(objs) > 0 {
			t.Errorf("block %s left %v after the delay: %v", m.ULID, objs, err)
		}
	}
}
