package head

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestChunkFiles keeps closed chunks in files: they read back the same
// before and after a checkpoint drops their pages, after a failure to
// create a file turns the arena to memory, and after a restart, and the
// files go with the head.
func TestChunkFiles(t *testing.T) {
	walDir := t.TempDir()
	chunkDir := filepath.Join(t.TempDir(), "chunks_head")
	if err := os.MkdirAll(chunkDir, 0o777); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(chunkDir, "00000007")
	if err := os.WriteFile(stray, []byte("left by a crash"), 0o666); err != nil {
		t.Fatal(err)
	}
	open := func() *Head {
		opts := DefaultOptions()
		opts.WALDir = walDir
		opts.ChunkDir = chunkDir
		opts.Stripes = 16
		h, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		h.arena.fileBlock = 16 << 10
		return h
	}
	h := open()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("a file left in the chunk directory survived Open: %v", err)
	}

	const nseries = 100
	var ts int64
	write := func(samples int) {
		t.Helper()
		app := h.Appender(context.Background())
		for end := ts + int64(samples); ts < end; ts++ {
			for i := range nseries {
				mustAppend(t, app, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), ts*1000, float64(ts*int64(i)))
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string) {
		t.Helper()
		got := readAll(t, h, 0, ts*1000, all)
		if len(got) != nseries {
			t.Fatalf("%s: %d series, want %d", what, len(got), nseries)
		}
		for i := range nseries {
			s := got[labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)).String()]
			if int64(len(s)) != ts {
				t.Fatalf("%s: series %d has %d samples, want %d", what, i, len(s), ts)
			}
			for j, smp := range s {
				if smp.t != int64(j)*1000 || smp.v != float64(int64(j)*int64(i)) {
					t.Fatalf("%s: series %d sample %d is (%d, %g)", what, i, j, smp.t, smp.v)
				}
			}
		}
	}

	write(1000)
	st := h.Stats()
	if st.ChunkFileBytes == 0 || st.ChunkFileBytes != st.ChunkBytes {
		t.Errorf("chunk bytes %d, in files %d: want all in files", st.ChunkBytes, st.ChunkFileBytes)
	}
	entries, err := os.ReadDir(chunkDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Errorf("%d chunk files, want several blocks' worth", len(entries))
	}
	check("in files")
	if err := h.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	check("after a checkpoint dropped the pages")

	// The next file cannot be created: the arena keeps chunks in memory.
	if err := os.RemoveAll(chunkDir); err != nil {
		t.Fatal(err)
	}
	inFiles := h.Stats().ChunkFileBytes
	write(1000)
	// The block open when the directory went, its file unlinked but
	// mapped, takes chunks until it is full.
	if st := h.Stats(); st.ChunkBytes <= inFiles+int64(h.arena.fileBlock) || st.ChunkFileBytes > inFiles+int64(h.arena.fileBlock) {
		t.Errorf("after the chunk directory went: %d chunk bytes, %d in files, want more in memory and at most one more block in files than %d", st.ChunkBytes, st.ChunkFileBytes, inFiles)
	}
	check("in files and memory")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = open()
	check("after a restart")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err = os.ReadDir(chunkDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%d chunk files left after Close", len(entries))
	}
}
