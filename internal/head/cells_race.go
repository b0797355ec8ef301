//go:build race

package head

// spanMemory returns n bytes for a span of cells. Under the race
// detector they come from the Go heap: it ignores synchronisation on
// memory outside the Go heap, so a series' lock in a mapped span would
// order nothing, and the accesses it guards to what the series points to
// on the heap would be reported as races.
func spanMemory(n int) []byte { return make([]byte, 0, n) }
