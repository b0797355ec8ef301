// Package wal is strata's write-ahead log: an append-only sequence of
// opaque byte records, kept in numbered segment files in one directory. It
// knows nothing of what the records mean; package record encodes them.
//
// # Guarantees
//
// Log returns once its records are handed to the operating system with
// write(2), so they survive the process being killed (kill -9, a panic, an
// OOM kill) but not the machine losing power. Sync makes everything logged
// so far durable against power loss too; how often to call it is the
// caller's fsync policy. Segments are fsynced when the log rotates away from
// them, so only the newest segment can hold unsynced data.
//
// # Failure model
//
// A crash can tear the last write: the newest segment may end in part of a
// record, or, after a power loss, in zeros or garbage where the file system
// extended the file but did not write the data. That is the normal end of a
// crashed log, not corruption: Replay (and Open, before it appends) cuts the
// newest non-empty segment back to its last whole record and logs a warning
// saying how many bytes went. Only the newest segment can end this way, so
// a bad record in any older segment is real corruption, reported as a
// *CorruptionError that names the segment and offset; so is a missing
// segment between two present ones.
//
// A bad record in the middle of the newest segment, with good records after
// it, cannot be told apart from a torn tail without guessing where the next
// record starts, so it is treated the same way: the segment is cut at the
// bad record and the records after it are lost, with a warning. kill -9
// cannot cause this (the page cache stays consistent); a power loss without
// fsync can, and then those records were never promised to survive.
//
// Write errors (such as ENOSPC) fail the Log call that hit them and leave
// the log as it was before that call: a partly written batch is cut off
// again, so a later Log, once space is back, does not follow half a record.
// An fsync error is different: Linux may have dropped the pages it could not
// write, so a later fsync that succeeds proves nothing. A segment whose
// fsync failed returns that error from every later Sync, and the log cannot
// rotate away from it; the process should restart and replay.
//
// The format on disk is described in docs/format/wal.md.
package wal
