// Package chunkenc encodes the samples of one series into compressed
// chunks and decodes them: float samples in XOR chunks, native histograms
// in histogram and float histogram chunks. It is pure code: no I/O, no
// globals, no locks. Whoever holds a chunk (the head, a block reader)
// decides where its bytes live and who may read them while it grows; see
// XORChunk.Bytes.
//
// Besides the encodings, it holds what the head, the blocks and
// compaction share about chunks: the Encoding numbers stored beside a
// chunk, the Chunk interface and FromData for stored bytes, the Meta a
// series lists its chunks by, and SeriesIterator, which walks a series'
// chunks for the PromQL engine.
//
// The byte formats of the encodings, with the reasons for their choices
// and worked examples, are in docs/format/chunks.md.
package chunkenc
