// Package block reads and writes strata's blocks: immutable directories
// holding every sample of a set of series over one time range, with an
// index of their labels (package index) and their chunks in segment files.
// docs/format/block.md, index.md and chunks.md describe the files.
//
// # Writing
//
// A Writer takes series in label order with their chunks and writes them
// under a temporary name (<ULID>.tmp); Finish fsyncs every file and
// directory and then renames the block into place. A crash at any point
// before the rename leaves only the temporary directory, which the store
// removes when it opens; after it, the block is complete. Merge writes one
// block from several with a Writer, copying chunks without decoding them.
//
// # Reading
//
// Open reads a block through Files: meta.json, then the index's tables;
// chunks are read only when a query needs them, and their CRC is checked
// then. Files may be a local directory (LocalFiles, which maps the files
// into memory so reads are slices, not copies) or any store that reads
// byte ranges, such as object storage. A Block is immutable and safe for
// concurrent use.
//
// # Lifetime
//
// A querier holds its block open: the chunk bytes its series hand out are
// slices of the mapped files and stay valid until the querier is closed.
// Close waits for the block's queriers, so a block that compaction
// replaced or retention deleted is unmapped only once no query reads it;
// a querier asked of a closed block gets ErrClosed. The store adds a
// merged block to what queries read before it closes and deletes its
// sources, so every query sees each sample in one block or both.
//
// # Errors
//
// Damaged files are reported as errors wrapping ErrCorrupt (a
// *CorruptionError names the file), never as a panic or wrong samples.
package block
