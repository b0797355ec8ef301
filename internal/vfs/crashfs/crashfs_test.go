package crashfs

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/strata-db/strata/internal/vfs"
)

func write(t *testing.T, fsys vfs.FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func read(fsys vfs.FS, name string) (string, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	return string(b), err
}

func TestCrashKeepsOnlyWhatWasSynced(t *testing.T) {
	fsys := New()
	if err := fsys.MkdirAll("data/wal", 0o777); err != nil {
		t.Fatal(err)
	}
	write(t, fsys, "data/a", "synced", true)
	write(t, fsys, "data/b", "not synced", false)
	if err := vfs.SyncDir(fsys, "data"); err != nil {
		t.Fatal(err)
	}
	// After the directory's fsync: a new file, a rename and a removal,
	// none of them made durable.
	write(t, fsys, "data/c", "created after", true)
	if err := fsys.Rename("data/a", "data/a2"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("data/b"); err != nil {
		t.Fatal(err)
	}
	// Appended after its sync: the append is lost.
	f, _ := fsys.OpenFile("data/a2", os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(" and more"))

	c := fsys.Crash()
	for name, want := range map[string]string{"data/a": "synced", "data/b": ""} {
		if got, err := read(c, name); err != nil || got != want {
			t.Errorf("%s after crash: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"data/c", "data/a2"} {
		if _, err := read(c, name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after crash: %v", name, err)
		}
	}
	if _, err := c.Stat("data/wal"); err != nil {
		t.Errorf("directory made by MkdirAll gone after crash: %v", err)
	}
	// The renamed file's content as of its sync, once the rename is
	// durable.
	if err := vfs.SyncDir(fsys, "data"); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(fsys.Crash(), "data/a2"); got != "synced" {
		t.Errorf("renamed file after a durable rename: %q", got)
	}
}

func TestCrashAfter(t *testing.T) {
	fsys := New()
	fsys.MkdirAll("d", 0o777)
	fsys.CrashAfter(2)
	write(t, fsys, "d/x", "1", false) // open and write: 2 changes
	if _, err := fsys.OpenFile("d/y", os.O_WRONLY|os.O_CREATE, 0o666); !errors.Is(err, ErrCrashed) {
		t.Errorf("third change: %v, want ErrCrashed", err)
	}
	if !fsys.Crashed() {
		t.Error("Crashed is false")
	}
	if got, err := read(fsys, "d/x"); err != nil || got != "1" {
		t.Errorf("reads after the crash point: %q, %v", got, err)
	}
}

func TestRenameDirectory(t *testing.T) {
	fsys := New()
	fsys.MkdirAll("data/blk.tmp/chunks", 0o777)
	write(t, fsys, "data/blk.tmp/chunks/000001", "chunks", true)
	// Without an fsync of its directory, the file's entry is lost even
	// if the directory is renamed durably.
	if err := fsys.Rename("data/blk.tmp", "data/blk"); err != nil {
		t.Fatal(err)
	}
	vfs.SyncDir(fsys, "data")
	if _, err := read(fsys.Crash(), "data/blk/chunks/000001"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file whose directory was not fsynced survived: %v", err)
	}
	vfs.SyncDir(fsys, "data/blk/chunks")
	fsys.Rename("data/blk", "data/blk.tmp")
	if err := fsys.Rename("data/blk.tmp", "data/blk"); err != nil {
		t.Fatal(err)
	}
	vfs.SyncDir(fsys, "data")
	if got, _ := read(fsys.Crash(), "data/blk/chunks/000001"); got != "chunks" {
		t.Errorf("file in a renamed directory after crash: %q", got)
	}
	entries, _ := fsys.ReadDir("data")
	if len(entries) != 1 || entries[0].Name() != "blk" || !entries[0].IsDir() {
		t.Errorf("entries %v", entries)
	}
}

// TestLastSync checks the clock of changes and the time of each
// directory's last file fsync.
func TestLastSync(t *testing.T) {
	fsys := New()
	if err := fsys.MkdirAll("d/sub", 0o777); err != nil {
		t.Fatal(err)
	}
	if got := fsys.LastSync("d"); got != -1 {
		t.Errorf("LastSync before any fsync: %d", got)
	}
	before := fsys.Changes()
	write(t, fsys, "d/a", "x", true)
	synced := fsys.Changes()
	write(t, fsys, "d/sub/b", "y", true)
	subSynced := fsys.Changes()
	write(t, fsys, "d/c", "z", false)
	if now := fsys.Changes(); before >= synced || synced >= subSynced || subSynced >= now {
		t.Errorf("Changes %d, %d, %d, %d: want it to grow with each write", before, synced, subSynced, now)
	}
	if got := fsys.LastSync("d"); got != synced {
		t.Errorf("LastSync(d) %d, want %d", got, synced)
	}
	if got := fsys.LastSync("d/sub/"); got != subSynced {
		t.Errorf("LastSync(d/sub/) %d, want %d", got, subSynced)
	}
}
