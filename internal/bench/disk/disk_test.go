package disk

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, n int) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("wal/00000000", 1000)
	write("wal/checkpoint.1/00000000", 200)
	write("wal-old/x", 30)
	write("chunks_head/000001", 4000)
	write("01HXYZ/index", 500)
	write("walnut", 7) // a file, not a directory: not a log
	u, err := Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.WAL.Apparent != 1230 || u.WAL.Files != 3 {
		t.Errorf("WAL = %+v, want 1230 bytes in 3 files", u.WAL)
	}
	if u.Other.Apparent != 4507 || u.Other.Files != 3 {
		t.Errorf("Other = %+v, want 4507 bytes in 3 files", u.Other)
	}
	if u.Total.Apparent != u.WAL.Apparent+u.Other.Apparent || u.Total.Allocated != u.WAL.Allocated+u.Other.Allocated {
		t.Errorf("Total %+v is not WAL + Other", u.Total)
	}
	if u.Total.Allocated <= 0 {
		t.Errorf("Allocated = %d", u.Total.Allocated)
	}
	if _, err := Measure(filepath.Join(dir, "missing")); err == nil {
		t.Error("measuring a missing directory succeeded")
	}
}
