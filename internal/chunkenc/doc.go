// Package chunkenc encodes the samples of one series into compressed
// chunks and decodes them: float samples in XOR chunks, native histograms
// in histogram and float histogram chunks. It is pure code: no I/O, no
// globals, no locks. Whoever holds a chunk (the head, a block reader)
// decides where its bytes live and who may read them while it grows; see
// XORChunk.Bytes.
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
//
// # Histogram chunk format
//
// A histogram chunk holds integer native histograms (histogram.Histogram),
// each with an int64 timestamp, as an XOR chunk holds floats. The
// histograms of a chunk share one layout: schema, zero threshold, bucket
// spans and custom bounds, stored once. Every histogram stores one value
// per bucket of the layout, 0 for buckets it lacks:
//
//	chunk   = count:uint16 (big-endian)  [ header:uint8  layout  t0  stream  padding ]
//
// count is the number of samples, at most 65535; the part in brackets is
// there only if count is not 0, so an empty chunk is 00 00, as an empty
// XOR chunk is. header is the CounterResetHeader: 0 unknown, 1 counter
// reset, 2 not a counter reset, 3 gauge histograms; decoders reject other
// values. layout is whole bytes:
//
//	layout  = schema:varint
//	          zeroThreshold:64 bits  positive:spans  negative:spans
//	            (schema is not -53)
//	          positive:spans  n:uvarint  n * bound:64 bits
//	            (schema -53: custom buckets)
//	spans   = n:uvarint  n * (offset:varint  length:uvarint)
//
// varints are signed and zig-zag (encoding/binary.AppendVarint), uvarints
// unsigned; floats are math.Float64bits, big-endian. A span is a
// histogram.Span: the first offset is the index of the first bucket, a
// later one the gap after the previous span. Spans are canonical: offsets
// in the int32 range, lengths in [1, 2^32-1], and gaps of at least one
// bucket; decoders reject others. Custom buckets have no zero threshold,
// zero count or negative buckets. The buckets the spans cover, positive
// then negative, each in increasing index order, are the layout's B
// buckets.
//
// t0 is the first timestamp, a varint. The stream then starts, byte
// aligned, as bits written most significant first, and padding is 0 to 7
// zero bits ending the last byte; as in an XOR chunk, decoders report
// trailing bytes, non-zero padding and a stream that ends early. Every
// sample i is:
//
//	dod       i > 0: timestamp delta-of-delta, in the XOR chunk's buckets;
//	          the delta before sample 1 counts as 0, so sample 1 writes
//	          its delta
//	sum       XOR-encoded as an XOR chunk's values, against the previous
//	          sample's sum, 0 before sample 0, in a window that starts
//	          as leading=0, sigbits=64
//	zero      zero count, varbit (not for custom buckets)
//	buckets   B absolute bucket counts, varbit
//	count     count - zero count - bucket counts (uint64 arithmetic
//	          wrapping), varbit
//
// unless sum is Prometheus' stale marker 0x7ff0000000000002: a stale
// marker is only its dod and sum. The zero count, each bucket and the
// count residue are each a series over the chunk's histograms that are
// not stale markers, as int64 (two's complement of the uint64 counts):
// the first histogram writes its value, the second its delta from the
// first, every later one its delta-of-delta, all wrapping like int64
// arithmetic. varbit is:
//
//	0                           v == 0
//	10        +  2 bits         -2 <= v < 2
//	110       +  4 bits         -8 <= v < 8
//	1110      +  6 bits         -32 <= v < 32
//	11110     +  9 bits         -256 <= v < 256
//	111110    + 13 bits         -4096 <= v < 4096
//	1111110   + 20 bits         -524288 <= v < 524288
//	11111110  + 36 bits         -2^35 <= v < 2^35
//	11111111  + 64 bits         any other
//
// in two's complement. Decoders accept any valid choice of bucket, as for
// timestamps; this encoder takes the smallest.
//
// Since every histogram but a stale marker spends a bit at least on every
// bucket, and the encoder takes the layout from one, decoders reject a
// layout with more buckets than the stream has bits before allocating for
// them.
//
// # Float histogram chunk format
//
// A float histogram chunk holds histogram.FloatHistogram, in the format
// of the histogram chunk but for the values of a sample that is not a
// stale marker:
//
//	zero      zero count (not for custom buckets)
//	buckets   B bucket counts
//	count     count
//
// all XOR-encoded as an XOR chunk's values, each with a window of its own
// that starts as leading=0, sigbits=64. The zero count and each bucket
// are XOR'd with their value in the chunk's previous histogram that is
// not a stale marker, 0 before the first. The count is XOR'd with the
// count those values predict: 0 + zero count + bucket counts, float64
// additions in the order of the stream (0 + bucket counts for custom
// buckets).
//
// # Histograms in a chunk
//
// The layout is the union of the layouts of the chunk's histograms: when
// a histogram has buckets the layout lacks, the encoder re-encodes the
// chunk with the union, the new buckets 0 in the histograms already in
// it. A histogram with a different schema, zero threshold or custom
// bounds (compared bit by bit) needs a new chunk.
//
// The header says how the chunk's first histogram relates to the previous
// chunk's last: its hint. Within a chunk, counters never reset, and a
// decoder gives every later histogram the hint "not a counter reset", or
// "gauge" in a chunk of gauge histograms. The encoder enforces it by
// refusing a counter histogram whose count, zero count or a bucket is
// lower than in the previous one; the next chunk starts with it.
//
// Stale markers carry nothing but their sum: the series of values skip
// them, and the next histogram is compared with the one before the
// marker. A decoder returns a stale marker as Prometheus writes one, all
// zero but the sum, without a hint. A chunk that starts with stale
// markers has the layout of an empty histogram of schema 0 and the first
// marker's hint as header until a histogram comes: the encoder then
// re-encodes the chunk with that histogram's layout and header.
//
// # Why these choices for histograms
//
// The benchmark histograms (BenchmarkHistogramAppend) model a latency
// histogram of schema 3 with about 20 populated buckets, and 20 or 1000
// observations per 15s scrape, give or take 10%. On them a chunk of 120
// takes 16.9 and 31.0 bytes per histogram, and Prometheus' histogram
// chunk (v0.315.0) 19.3 at 20 observations; at 1000 it cut the series
// into 8 chunks. The sum, a float that changes in most of its bits, takes
// about 6.8 bytes of the 16.9; the buckets about 8.5.
//
// Buckets hold absolute counts, not the differences between neighbouring
// buckets that histogram.Histogram holds: the delta-of-delta of a count
// is the change in how fast the bucket fills, noise around 0, and the
// difference between neighbours adds the noise of two. On the benchmark
// histograms the buckets take 8.5 bytes per histogram at rate 20 against
// 10.1 as neighbour differences, 22.5 against 24.4 at 1000, and about the
// same at 10000; the differences win only when the load swings so much
// between scrapes that all buckets move together.
//
// The count is almost always the zero count plus the buckets (NaN
// observations are in none), so storing what is left costs a bit per
// histogram, where the count's own delta-of-delta takes 0.6 bytes at rate
// 20 and 1.7 at 1000. For float histograms the count's XOR with that sum
// is usually 0 or narrow: 1 bit against 1.7 bytes (2.3 at rate 1000) for
// an XOR with the previous count.
//
// The varbit widths fit the delta-of-deltas of the benchmark buckets: 2.7
// bits each at rate 20, 5.4 at rate 1000. Prometheus' widths (3, 6, 9,
// 12, ...) would spend 5% more at rate 20 and as much at 1000: the
// choice matters little. The 36-bit width keeps the whole
// counts of a long-running counter's first histogram in a chunk, in the
// millions, out of the 64-bit one.
//
// # Histogram chunk example
//
// Two histograms of schema 0 with zero threshold 0 and buckets 0 and 1 at
// (1000, count 3, sum 1.5, buckets 1 2) and (16000, count 4, sum 2.5,
// buckets 2 2) encode as
//
//	00 02                      count 2
//	00                         header: unknown
//	00                         schema 0
//	00 00 00 00 00 00 00 00    zero threshold 0
//	01 00 02                   positive spans: one, offset 0, length 2
//	00                         negative spans: none
//	d0 0f                      t0 = 1000
//	11 00010 001011 11111111111
//	                           sum 1.5 = 0x3ff8<<48: leading 2, sigbits 11
//	0                          zero count 0
//	10 01   110 0010           buckets 1, 2
//	0                          count 3 - 0 - 1 - 2 = 0
//	1110 00000011101010011000  dod 15000: the delta
//	11 00001 001101 1111111111111
//	                           1.5^2.5 = 0x7ffc<<48: leading 1, sigbits 13
//	0                          zero count: delta 0
//	10 01   0                  bucket deltas 1, 0
//	0                          count residue: delta 0
//	00                         padding
//
// that is 00 02 00 00 00 00 00 00 00 00 00 00 01 00 02 00 d0 0f c4 5f ff
// 4e 27 01 d4 c6 13 7f fe 90.
package chunkenc
