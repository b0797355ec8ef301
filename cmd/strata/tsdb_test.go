package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/chunkenc"
)

// TestTSDBListWhileBlocksGo lists a data directory while blocks are
// written to and deleted from it, as compaction and retention do in a
// running server: a block that goes half-way through its listing is left
// out, not an error.
func TestTSDBListWhileBlocksGo(t *testing.T) {
	dir := t.TempDir()
	kept := writeBlock(t, dir)
	defer churnBlocks(t, dir)()
	for range 500 {
		var out strings.Builder
		if err := tsdbList(listOptions{dir: dir, human: true}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), kept) {
			t.Fatalf("block %s is missing:\n%s", kept, out.String())
		}
	}
}

// TestTSDBAnalyzeWhileBlocksGo analyzes the newest block while newer ones
// come and go: one deleted before it is opened is passed over for the
// newest that remains.
func TestTSDBAnalyzeWhileBlocksGo(t *testing.T) {
	dir := t.TempDir()
	writeBlock(t, dir)
	defer churnBlocks(t, dir)()
	for range 500 {
		var out strings.Builder
		if err := tsdbAnalyze(analyzeOptions{dir: dir, limit: 20}, &out); err != nil {
			t.Fatal(err)
		}
	}
}

// churnBlocks writes and deletes blocks in dir, each newer than those
// before, until the function it returns is called.
func churnBlocks(t *testing.T, dir string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			// Deleted as the server deletes a block: renamed to its
			// .tmp name, then removed.
			path := filepath.Join(dir, writeBlock(t, dir))
			if err := os.Rename(path, path+".tmp"); err != nil {
				t.Error(err)
				return
			}
			if err := os.RemoveAll(path + ".tmp"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// writeBlock writes a block of one series into dir and returns its ULID.
func writeBlock(t *testing.T, dir string) string {
	w, err := block.NewWriter(dir, block.WriterOptions{MinTime: 0, MaxTime: 1000})
	if err != nil {
		t.Error(err)
		return ""
	}
	xc := chunkenc.NewXORChunk()
	xc.Append(0, 1)
	err = w.AddSeries(labels.FromStrings("__name__", "up"), []chunkenc.Meta{{Data: xc.Bytes(), Enc: chunkenc.EncXOR}}, nil)
	if err != nil {
		t.Error(err)
	}
	m, err := w.Finish()
	if err != nil {
		t.Error(err)
	}
	return m.ULID.String()
}
