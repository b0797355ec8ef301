package bucket

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/vfs"
)

// tree returns the files below dir with their bytes.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameTree(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("restored files %v, want %v (or their bytes differ)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// TestBackupRestore backs a directory of blocks up, restores it bit for
// bit, and checks that a second backup and restore after blocks come,
// go and get a tombstones file move only what changed; that a backup cut
// short leaves the last one whole; and that a restore refuses a data
// directory with a write-ahead log and a block whose objects are not
// those backed up.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "data")
	var metas []block.Meta
	for i := range 3 {
		metas = append(metas, writeBlockIn(t, vfs.OS{}, src, int64(i)*1000, 1, nil))
	}
	bkt := newCountingBucket(objstore.NewInMemBucket())
	if _, err := Restore(ctx, bkt, dst, logger); err == nil || !strings.Contains(err.Error(), "no backup") {
		t.Fatalf("restore of an empty bucket: %v", err)
	}
	st, err := Backup(ctx, bkt, src, logger)
	if err != nil || st.Blocks != 3 || st.Uploaded != 3 || st.Deleted != 0 {
		t.Fatalf("first backup %+v, %v", st, err)
	}
	rs, err := Restore(ctx, bkt, dst, logger)
	if err != nil || rs.Blocks != 3 || rs.Downloaded != 3 {
		t.Fatalf("first restore %+v, %v", rs, err)
	}
	sameTree(t, tree(t, dst), tree(t, src))

	// Nothing changed: only the manifest is written again.
	bkt.uploads = nil
	if st, err = Backup(ctx, bkt, src, logger); err != nil || st.Uploaded != 0 || st.Bytes != 0 || !slices.Equal(bkt.uploads, []string{ManifestName}) {
		t.Fatalf("unchanged backup %+v, %v, uploads %v", st, err, bkt.uploads)
	}

	// A block goes (merged or past retention), one comes, one gets
	// tombstones.
	gone, stoned := metas[0].ULID.String(), metas[1].ULID.String()
	if err := os.RemoveAll(filepath.Join(src, gone)); err != nil {
		t.Fatal(err)
	}
	added := writeBlockIn(t, vfs.OS{}, src, 5000, 1, nil).ULID.String()
	b, err := block.Open(block.LocalFiles(filepath.Join(src, stoned)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Delete(ctx, vfs.OS{}, filepath.Join(src, stoned), 0, 2000, labels.MustNewMatcher(labels.MatchEqual, "i", "03")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	bkt.uploads = nil
	if st, err = Backup(ctx, bkt, src, logger); err != nil || st.Blocks != 3 || st.Uploaded != 2 || st.Deleted != 1 {
		t.Fatalf("second backup %+v, %v", st, err)
	}
	for _, name := range bkt.uploads {
		if dir, _, _ := strings.Cut(name, "/"); dir != added && name != path.Join(stoned, "tombstones") && name != ManifestName {
			t.Errorf("second backup sent %s again", name)
		}
	}
	if l, _ := listBucket(ctx, bkt); len(l.objects) != 3 || l.objects[metas[0].ULID] != nil {
		t.Errorf("bucket holds blocks %v, want 3 without %s", slices.Collect(maps.Keys(l.objects)), gone)
	}
	if rs, err = Restore(ctx, bkt, dst, logger); err != nil || rs.Downloaded != 2 || rs.Removed != 1 {
		t.Fatalf("second restore %+v, %v", rs, err)
	}
	want := tree(t, src)
	sameTree(t, tree(t, dst), want)

	// A backup cut short by the bucket going away after two uploads:
	// the last complete backup still restores whole.
	writeBlockIn(t, vfs.OS{}, src, 9000, 1, nil)
	bkt.uploads, bkt.failAfter = nil, 2
	if _, err := Backup(ctx, bkt, src, logger); err == nil {
		t.Fatal("backup to a failing bucket succeeded")
	}
	bkt.failAfter = -1
	other := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(ctx, bkt, other, logger); err != nil {
		t.Fatal(err)
	}
	sameTree(t, tree(t, other), want)
	if st, err = Backup(ctx, bkt, src, logger); err != nil || st.Blocks != 4 || st.Uploaded != 1 {
		t.Fatalf("backup after the one cut short %+v, %v", st, err)
	}
	if _, err := Restore(ctx, bkt, other, logger); err != nil {
		t.Fatal(err)
	}
	sameTree(t, tree(t, other), tree(t, src))

	// A restore into a directory with a WAL is refused.
	walDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(walDir, "wal"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(walDir, "wal", "00000000"), []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, bkt, walDir, logger); err == nil || !strings.Contains(err.Error(), "write-ahead log") {
		t.Errorf("restore into a directory with a WAL: %v", err)
	}

	// An object changed in the bucket fails the restore and leaves the
	// block out, not half there.
	if err := bkt.Upload(ctx, path.Join(added, "index"), strings.NewReader("not the index")); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(ctx, bkt, fresh, logger); err == nil || !strings.Contains(err.Error(), "not the file backed up") {
		t.Fatalf("restore of a changed object: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh, added)); !os.IsNotExist(err) {
		t.Errorf("block with a changed object restored: %v", err)
	}
}
