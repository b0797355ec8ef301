// Package chunkenc encodes the samples of one series into compressed
// chunks and decodes them. It is pure code: no I/O, no globals, no locks.
// Whoever holds a chunk (the head, a block reader) decides where its bytes
// live and who may read them while it grows; see XORChunk.Bytes.
//
// # XOR chunk format
//
// An XOR chunk holds float samples, each an int64 timestamp (milliseconds
// since the epoch; any int64 round-trips) and a float64 value (any bit
// pattern round-trips, NaN payloads such as Prometheus' stale marker
// 0x7ff0000000000002 included). It is the Gorilla encoding
// (Pelkonen et al., "Gorilla: A Fast, Scalable, In-Memory Time Series
// Database", VLDB 2015) with millisecond timestamp buckets:
//
//	chunk   = count:uint16 (big-endian)  stream  padding
//
// count is the number of samples, at most 65535. stream is a sequence of
// bits written most significant bit first: its first bit is the top bit of
// byte 2. padding is 0 to 7 zero bits ending the last byte. Nothing
// follows; a decoder reports trailing bytes and non-zero padding as
// corruption, as it does a stream that ends before count samples.
//
// Sample 0 starts on a byte boundary:
//
//	t0      signed varint (zig-zag, as encoding/binary.AppendVarint), 1-10 bytes
//	v0      64 bits: math.Float64bits(v0)
//
// Sample 1 is still byte-aligned:
//
//	delta   t1-t0 as a uint64 (int64 arithmetic wraps), unsigned varint
//	value   XOR-encoded as below
//
// Every later sample i:
//
//	dod     delta-of-delta (t[i]-t[i-1]) - (t[i-1]-t[i-2]), int64 arithmetic
//	        wrapping, in a bucket that holds it, as two's complement:
//	          0                    dod == 0
//	          10   +  7 bits       -64 <= dod < 64
//	          110  + 14 bits       -8192 <= dod < 8192
//	          1110 + 20 bits       -524288 <= dod < 524288
//	          1111 + 64 bits       any other
//	value   XOR-encoded as below
//
// A value is encoded as x = bits(v[i]) XOR bits(v[i-1]) relative to a
// window, a run of sigbits bits after leading zero bits, which starts at
// sample 1 as leading=0, sigbits=64 (all bits):
//
//	0                                   x == 0: the value repeats
//	10 + sigbits bits                   x's bits within the current window
//	11 + leading:5 + sigbits:6          a new window (sigbits 64 written as 0),
//	   + sigbits bits                   then x's bits within it
//
// The bits within the window are x >> (64-leading-sigbits). A new window
// must have leading+sigbits <= 64; the decoder rejects others. Decoders
// accept any valid choice of bucket and window; what this encoder chooses:
// the smallest bucket; for a new window, leading is x's count of leading
// zeros capped at 31 (the most 5 bits hold) and sigbits the rest down to
// its last one bit; and it keeps the current window when x fits in it and
// the window is at most 11 bits (the size of a new window's fields) wider
// than x's own.
//
// # Why these choices
//
// The buckets differ from the Gorilla paper (seconds, 7/9/12/32 bits) and
// from Prometheus (milliseconds, 14/17/20/64) in one place: the first,
// 9-bit bucket covers a scrape jitter of tens of milliseconds. Scrapes and
// OTLP exports rarely land on the exact millisecond, and with jitter of a
// few ms every sample of a constant series costs 9+1 bits here against 16+1
// with a 14-bit first bucket. On the series of BenchmarkXORAppend (15s,
// +-5ms) that is 1.38 rather than 2.23 bytes/sample for a constant, 2.91
// rather than 3.73 for a counter. In exchange a dod of 64ms to 8s costs
// one bit more (17 rather than 16) and one of 8 to 65s four bits more (24
// rather than 20, the 17-bit bucket being gone); a regular series sees
// those only around missed scrapes.
//
// Starting with a 64-bit window instead of none lets sample 1 reuse it
// when its XOR is nearly that wide anyway (as with unrelated values), and
// the cost test keeps an early wide window from sticking to the series
// when later XORs are narrow.
//
// Every append leaves a complete chunk: the header holds the new count and
// the last byte's unused bits are zero padding. So a copy of the bytes
// taken between two appends is a valid chunk of the samples so far; the
// next append rewrites the count and writes over the padding.
//
// # Example
//
// The samples (1000, 1.0), (16000, 1.0), (31002, 3.0) encode as
//
//	00 03                      count 3
//	d0 0f                      t0 = 1000, zig-zag 2000
//	3f f0 00 00 00 00 00 00    v0 = 1.0
//	98 75                      delta 15000
//	0                          1.0 repeats
//	10 0000010                 dod 2
//	11 00001 001100 111111111111
//	                           1.0^3.0 = 0x7ff8<<48: leading 1, sigbits 12
//	00000                      padding
//
// that is 00 03 d0 0f 3f f0 00 00 00 00 00 00 98 75 40 b0 99 ff e0.
package chunkenc
