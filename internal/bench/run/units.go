package run

import (
	"os"
	"time"

	"github.com/strata-db/strata/internal/bench/proc"
)

// selfCPU returns the CPU time this process has used, 0 if unknown.
func selfCPU() time.Duration {
	c, err := proc.ReadCPU(os.Getpid())
	if err != nil {
		return 0
	}
	return c.Total()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
