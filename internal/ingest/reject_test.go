package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/storage"
)

func TestRejections(t *testing.T) {
	var rj Rejections
	if rj.Any() || rj.Message(5, "samples") != "0 of 5 samples rejected" {
		t.Fatalf("empty: %v %q", rj.Any(), rj.Message(5, "samples"))
	}
	for i := range 12 {
		rj.Add(2, fmt.Errorf("series %d: %w", i, storage.ErrOutOfOrderSample))
	}
	msg := rj.Message(100, "data points")
	lines := strings.Split(msg, "\n")
	if !rj.Any() || rj.Refused() != 24 || lines[0] != "24 of 100 data points rejected" || len(lines) != 12 ||
		lines[10] != "series 9: out of order sample" || lines[11] != "(2 more problems not listed)" {
		t.Errorf("message:\n%s", msg)
	}
	rj.Reset()
	if rj.Any() || rj.Refused() != 0 || rj.Details() != "" {
		t.Errorf("after Reset: %v %d %q", rj.Any(), rj.Refused(), rj.Details())
	}
}

func TestIsBadData(t *testing.T) {
	if !IsBadData(fmt.Errorf("x: %w", storage.ErrInvalidHistogram)) || IsBadData(storage.ErrNotReady) || IsBadData(fmt.Errorf("disk full")) {
		t.Error("IsBadData misclassifies")
	}
}
