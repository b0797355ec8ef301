//go:build !race

package head

// spanMemory returns n bytes for a span of cells, from the system (see
// mapBlock).
func spanMemory(n int) []byte { return mapBlock(n) }
