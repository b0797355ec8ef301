// Package index holds the inverted indexes of strata's store: postings,
// the sorted lists of series refs per label pair, as iterators that
// intersect, merge and subtract without materialising lists; the one
// function that turns label matchers into postings, with Prometheus'
// semantics, for the in-memory head (MemPostings) and the blocks on disk
// (Reader) alike; and the block index file, written by Writer and read by
// Reader through an io.ReaderAt-like Source, so that a block can be read
// from object storage as well as from a local file.
//
// The file format is described in docs/format/index.md.
//
// # Errors
//
// A damaged index file is reported as an error wrapping ErrCorrupt (a
// *CorruptionError says which section and offset), never as a panic or a
// wrong answer: every section and every series entry and postings list
// carries a CRC-32 that is checked when it is read.
package index
