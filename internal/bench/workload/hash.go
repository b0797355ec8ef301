package workload

// mix is the splitmix64 finaliser: a cheap, well-distributed bijection on
// 64-bit values. Every "random" choice in this package is mix of the seed
// and the coordinates of the choice, so any value can be computed on its
// own, in any order, on any goroutine.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// hash2 and hash3 combine a seed with coordinates.
func hash2(seed, a, b uint64) uint64    { return mix(mix(seed^a) ^ b) }
func hash3(seed, a, b, c uint64) uint64 { return mix(mix(mix(seed^a)^b) ^ c) }

// Salts keep the different uses of one (seed, id) pair independent.
const (
	saltBase uint64 = iota + 1
	saltSample
	saltTopology
	saltInstance
	saltRate
)
