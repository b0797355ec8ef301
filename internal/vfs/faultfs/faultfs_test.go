package faultfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFS(t *testing.T) {
	dir := t.TempDir()
	fsys := New(nil)
	path := filepath.Join(dir, "f")
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := func() int64 {
		t.Helper()
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}

	fsys.FailWrites(syscall.ENOSPC)
	if n, err := f.WriteAt([]byte("abcd"), 0); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("WriteAt = %d, %v; want 0, ENOSPC", n, err)
	}
	if err := f.Truncate(10); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("growing Truncate: %v, want ENOSPC", err)
	}
	if _, err := fsys.OpenFile(filepath.Join(dir, "g"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("creating a file: %v, want ENOSPC", err)
	}
	fsys.FailWritesPartially(syscall.ENOSPC)
	if n, err := f.WriteAt([]byte("abcde"), 0); n != 2 || !errors.Is(err, syscall.ENOSPC) || size() != 2 {
		t.Errorf("partial WriteAt = %d, %v, file %d bytes; want 2, ENOSPC, 2 bytes", n, err, size())
	}
	if err := f.Truncate(1); err != nil {
		t.Errorf("shrinking Truncate while writes fail: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("Sync while writes fail: %v", err)
	}

	fsys.FailTruncates(syscall.EIO)
	fsys.FailSyncs(syscall.EIO)
	var hooked []string
	fsys.SetSyncHook(func(name string) { hooked = append(hooked, name) })
	if err := f.Truncate(0); !errors.Is(err, syscall.EIO) {
		t.Errorf("Truncate: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Sync: %v, want EIO", err)
	}

	fsys.Heal()
	if n, err := f.WriteAt([]byte("abcd"), 0); n != 4 || err != nil {
		t.Errorf("WriteAt after Heal = %d, %v", n, err)
	}
	if err := f.Truncate(2); err != nil {
		t.Errorf("Truncate after Heal: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("Sync after Heal: %v", err)
	}
	if got := fsys.Syncs(); got != 3 {
		t.Errorf("Syncs() = %d, want 3", got)
	}
	if len(hooked) != 2 || hooked[0] != path || hooked[1] != path {
		t.Errorf("hook called with %q, want %q twice", hooked, path)
	}
}
