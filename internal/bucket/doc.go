// Package bucket keeps strata's blocks in object storage: any bucket
// Thanos' objstore library reaches (S3 and what speaks its protocol, GCS,
// Azure, Swift, a local directory, ...), configured by the same file as
// Thanos' --objstore.config-file.
//
// # Layout
//
// A block in a bucket is the block's directory as the store writes it,
// under its ULID:
//
//	<ULID>/index
//	<ULID>/chunks/000001, ...
//	<ULID>/meta.json
//
// The meta.json is the block's own with a "thanos" section added, as
// Thanos' components write it: the external labels of the node that wrote
// the block (which its series do not hold), downsampling resolution 0,
// the source ("strata") and the files with their sizes. A block is in the
// bucket once its meta.json is: the Shipper uploads it last, so a reader
// that lists the bucket never sees half a block, and one that finds a
// directory without a meta.json may take it for an upload under way or
// one that a crash cut short, never for a block.
//
// # What a node uploads
//
// The Shipper uploads every block the store writes from its head (level
// 1, late samples' blocks included), once it is complete. The store's own
// merges are not uploaded: their samples are already in the bucket in
// their sources, and the bucket is compacted on its own (see Keeping a
// bucket). To keep that true the store does not merge (and so delete) a
// block before it is uploaded. A block no uploaded block holds the
// sources of, whatever its level, is uploaded as it is: so turning
// uploads on for a data directory that already has merged blocks sends
// those once too.
//
// A node's blocks are then both on its disk and in the bucket until its
// own retention deletes them. A Thanos Querier that asks both the node
// and a store over the bucket gets the same samples from each for that
// time; its merge of one series' chunks from several stores drops the
// samples of a timestamp it has already read, so none is counted twice.
//
// # Serving a bucket
//
// A Store serves a bucket's blocks as a storage.Queryable, for `strata
// store`: each block's series with its meta.json's external labels
// added, the blocks of one label set merged (a sample of a time two
// blocks hold is read once). Sync lists the bucket and opens the blocks
// it has not opened, through remoteFiles: the index copied to a local
// directory once and mapped, the chunk segments read by range requests
// of whole pages kept in a bounded LRU cache.
//
// # Keeping a bucket
//
// A Compactor (`strata compact`, one per bucket) merges the blocks of
// each label set as a node merges its own, uploads each merge before it
// marks the merge's sources for deletion (deletion-mark.json, as
// Thanos'), marks the blocks beyond the bucket's retention, and deletes
// marked blocks once their mark is DeleteDelay old. A Store serves no
// marked block, and of a merge and its sources only the merge, so a
// query reads each sample once at every step of a compaction.
//
// # Crash safety
//
// What is uploaded is recorded in <data-dir>/shipper.json, written to a
// temporary file, fsynced and renamed into place after the block's
// meta.json is in the bucket. A crash (or a failed upload) before the
// meta.json leaves objects no reader takes for a block, uploaded again
// from the start on the next attempt; a crash after it and before the
// record is caught by a look for the block's meta.json in the bucket
// before any upload. A record that cannot be read is rebuilt the same
// way.
package bucket
