// Package wal is strata's write-ahead log: an append-only sequence of
// opaque byte records, kept in numbered segment files in one directory. It
// knows nothing of what the records mean; package record encodes them.
//
// # Guarantees
//
// With the default sync policy, SyncNever, Log returns once its records
// are handed to the operating system with write(2), so they survive the
// process being killed (kill -9, a panic, an OOM kill) but not the machine
// losing power. With SyncAlways, Log returns once they are fsynced too, and
// concurrent Log calls share fsyncs (group commit), so the cost of an fsync
// is spread over every caller that arrived while the previous one ran.
// Sync makes everything logged so far durable under either policy.
// Segments are fsynced when the log moves past them, so only the newest
// segment can hold unsynced data.
//
// # Checkpoints
//
// NextSegment starts a new segment and returns its number n; every record
// logged before it is in the segments below n. Once a checkpoint holds what
// those segments did, Truncate(n) deletes them, and replay starts at
// ReplayOptions.From = n.
//
// # Failure model
//
// A crash can tear the last write: the newest segment may end in part of a
// record, or, after a power loss, in zeros or garbage where the file system
// extended the file but did not write the data. Replay repairs a segment
// that holds a bad record, wherever it is in the log: it cuts the segment
// off at the end of the last good record before it, logs a warning saying
// how many bytes went, and goes on with the next segment. The good records
// after a bad one in the same segment are lost (where the next record
// starts is unknown); later segments keep all of theirs. kill -9 cannot
// cause a bad record in the middle of a segment (the page cache stays
// consistent); a power loss without fsync, or a disk going bad, can. Open
// repairs the newest non-empty segment the same way before it appends.
// Only a segment missing from the sequence is reported, as a
// *CorruptionError naming it.
//
// Write errors (such as ENOSPC) fail the Log call that hit them and leave
// the log as it was before that call: a partly written batch is cut off
// again, so a later Log, once space is back, does not follow half a record.
// An fsync error is different: Linux may have dropped the pages it could not
// write, so a later fsync that succeeds proves nothing. A segment whose
// fsync failed returns that error from every later fsync (so every later
// Sync, and every Log with SyncAlways, fails), and the log cannot move past
// it; the process should restart and replay.
//
// All file system access goes through an FS, so tests can inject faults
// (package faultfs).
//
// The format on disk is described in docs/format/wal.md.
package wal
