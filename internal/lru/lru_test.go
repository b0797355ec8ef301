package lru

import "testing"

func size(b []byte) int64 { return int64(len(b)) }

// The cache holds at most its limit, dropping the least recently used
// values first; a value over the limit alone is not kept, and adding a
// key again replaces its value rather than counting it twice.
func TestCache(t *testing.T) {
	c := New[int](30, size)
	for k := range 3 {
		c.Add(k, make([]byte, 10))
	}
	if c.Size() != 30 {
		t.Fatalf("size %d, want 30", c.Size())
	}
	if _, ok := c.Get(0); !ok {
		t.Fatal("0 missing")
	}
	c.Add(3, make([]byte, 10)) // drops 1, used least recently
	for k, want := range []bool{true, false, true, true} {
		if _, ok := c.Get(k); ok != want {
			t.Errorf("%d: held %v, want %v", k, ok, want)
		}
	}
	c.Add(4, make([]byte, 31))
	if _, ok := c.Get(4); ok || c.Size() != 30 {
		t.Fatalf("a value over the limit was kept: size %d", c.Size())
	}
	c.Add(3, make([]byte, 5))
	if v, ok := c.Get(3); !ok || len(v) != 5 || c.Size() != 25 {
		t.Fatalf("3 added again: %d bytes, held %v, size %d; want 5, true, 25", len(v), ok, c.Size())
	}
}
