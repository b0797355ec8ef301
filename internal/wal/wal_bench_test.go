package wal

import (
	"os"
	"testing"
)

var benchSizes = []struct {
	name string
	size int
}{
	{"1KiB", 1 << 10},
	{"64KiB", 64 << 10},
}

// BenchmarkLog measures appending records of one size, one per call,
// through write(2) into the page cache (no fsync). Its throughput counts
// record bytes.
//
// Compare two versions of the WAL with:
//
//	go test -run '^$' -bench 'BenchmarkLog|BenchmarkReplay' -benchmem -count=6 ./internal/wal/ > old.txt
//	# change the code
//	go test -run '^$' -bench 'BenchmarkLog|BenchmarkReplay' -benchmem -count=6 ./internal/wal/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkLog(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run("size="+bs.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := Open(dir, DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rec := make([]byte, bs.size)
			for i := range rec {
				rec[i] = byte(i)
			}
			b.ReportAllocs()
			b.SetBytes(int64(bs.size))
			var sinceCleanup int64
			for b.Loop() {
				if err := w.Log(rec); err != nil {
					b.Fatal(err)
				}
				// Keep the disk from filling on long runs: drop finished
				// segments now and then, outside the timer.
				if sinceCleanup += int64(bs.size); sinceCleanup > 1<<30 {
					b.StopTimer()
					removeFinishedSegments(b, w)
					sinceCleanup = 0
					b.StartTimer()
				}
			}
		})
	}
}

func removeFinishedSegments(b *testing.B, w *WAL) {
	first, last, err := w.Segments()
	if err != nil {
		b.Fatal(err)
	}
	for n := first; n < last; n++ {
		if err := os.Remove(segmentPath(w.Dir(), n)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay measures reading a 256 MiB log back from the page cache,
// checking every CRC. Its throughput counts the bytes of the log, frames
// included. Run it as BenchmarkLog says.
func BenchmarkReplay(b *testing.B) {
	const logSize = 256 << 20 // two segments of the default size
	for _, bs := range benchSizes {
		b.Run("size="+bs.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := Open(dir, DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			rec := make([]byte, bs.size)
			n := logSize / bs.size
			for i := range n {
				rec[0] = byte(i)
				if err := w.Log(rec); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(n * (headerSize + bs.size)))
			for b.Loop() {
				// Touch every record, as a decoder would.
				var got, sum int
				err := Replay(dir, nil, func(rec []byte) error {
					got++
					sum += int(rec[0]) + int(rec[len(rec)-1])
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("replayed %d records, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
