//go:build unix

package head

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/strata-db/strata/internal/chunkenc"
)

// TestArenaWriteFailure checks that a chunk whose file cannot be written
// goes to memory, and that a chain of chunks reads back across the
// change, in place and with pread.
func TestArenaWriteFailure(t *testing.T) {
	a, err := openArena(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	first, buf := storeChunk(a, nil, []byte{1, 2, 3}, 0, 10, chunkenc.EncXOR, nil)
	if f, _ := a.fileOf(unsafe.Slice(first, 1)); f == nil {
		t.Fatal("the first chunk is not in a file")
	}
	// The current block's file can be read but no longer written.
	f := a.cur.file
	ro, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(f.fd)
	f.fd = ro
	second, _ := storeChunk(a, buf, []byte{4, 5}, 20, 30, chunkenc.EncDecimal, first)
	if f, _ := a.fileOf(unsafe.Slice(second, 1)); f != nil || a.err == nil {
		t.Fatalf("after a failed write: chunk in file %v, arena error %v; want memory and the error kept", f, a.err)
	}
	rd := &chunkCopier{arena: a}
	for _, read := range []func(*byte) (headChunk, *byte, error){rd.chunkAt, (*chunkCopier)(nil).chunkAt} {
		c2, p, err := read(second)
		if err != nil {
			t.Fatal(err)
		}
		c1, _, err := read(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c1.bytes(), []byte{1, 2, 3}) || c1.maxt() != 10 || !bytes.Equal(c2.bytes(), []byte{4, 5}) || c2.mint != 20 || c2.encoding() != chunkenc.EncDecimal {
			t.Errorf("chain reads back as %v [%d, %d], %v [%d, %d] %s", c1.bytes(), c1.mint, c1.maxt(), c2.bytes(), c2.mint, c2.maxt(), c2.encoding())
		}
	}
	if n := a.liveChunks(); n != 2 {
		t.Errorf("%d chunks in the arena, want 2", n)
	}
}

// TestArenaEmptiesDir opens an arena on the files of a last run, and on
// what a crash while it set them aside left: the arena starts with none
// of them, and they are gone once it is closed.
func TestArenaEmptiesDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "chunks_head")
	for _, d := range []string{dir, dir + removingSuffix} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "00000000"), make([]byte, 1<<20), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	a, err := openArena(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + removingSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left: %v", dir+removingSuffix, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the last run's block file is still there: %v", err)
	}
	a.copy([]byte("a chunk"))
	a.close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == removingSuffix {
			t.Errorf("%s not deleted by close", e.Name())
		}
	}
}
