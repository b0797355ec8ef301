// Package disk measures how much space a server's data directory takes,
// split into its write-ahead log and everything else.
package disk

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Size is the size of a set of files.
type Size struct {
	// Allocated is what the files occupy on disk (st_blocks * 512): what
	// du(1) reports. It counts preallocated space and skips holes.
	Allocated int64 `json:"allocated_bytes"`
	// Apparent is the sum of file lengths, what ls -l shows.
	Apparent int64 `json:"apparent_bytes"`
	Files    int   `json:"files"`
}

func (s *Size) add(o Size) {
	s.Allocated += o.Allocated
	s.Apparent += o.Apparent
	s.Files += o.Files
}

// Usage is a data directory's size.
type Usage struct {
	Total Size `json:"total"`
	// WAL is everything under top-level entries named wal or wal*
	// (strata's and Prometheus' wal/; a server without a log has none),
	// and Other the rest (Prometheus' chunks_head and blocks, all of
	// VictoriaMetrics' directories).
	WAL   Size `json:"wal"`
	Other Size `json:"other"`
}

// Measure walks dir and returns its usage. Files that vanish during the
// walk (a server compacting) are skipped.
func Measure(dir string) (Usage, error) {
	var u Usage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path != dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		s := Size{Apparent: info.Size(), Files: 1}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			// st_blocks is in 512-byte units whatever the block size.
			s.Allocated = st.Blocks * 512
		} else {
			s.Allocated = info.Size()
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if IsWAL(top) && top != rel {
			u.WAL.add(s)
		} else {
			u.Other.add(s)
		}
		u.Total.add(s)
		return nil
	})
	if err != nil {
		return Usage{}, fmt.Errorf("measure %s: %w", dir, err)
	}
	return u, nil
}

// IsWAL reports whether a top-level directory of a data directory holds a
// write-ahead log, by its name.
func IsWAL(name string) bool { return strings.HasPrefix(name, "wal") }
