package wal

import (
	"fmt"
	"sync"
)

// SyncPolicy says when Log returns: how durable the records of a Log call
// are once it has.
type SyncPolicy int

const (
	// SyncNever: Log returns after write(2). The records survive the
	// process crashing (kill -9), not the machine losing power. Records
	// become durable when the log moves to a new segment, at Close, or
	// at a Sync. The default.
	SyncNever SyncPolicy = iota
	// SyncAlways: Log returns after its records are fsynced, so they
	// survive power loss. Concurrent Log calls share fsyncs (group
	// commit): a call whose records were written before an fsync started
	// waits for that fsync; one written while an fsync runs waits for the
	// next, and one fsync covers every call waiting for it.
	SyncAlways
)

// ParseSyncPolicy parses "never" or "always", as String writes them, for
// flags and configuration files.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "never":
		return SyncNever, nil
	case "always":
		return SyncAlways, nil
	}
	return 0, fmt.Errorf("unknown WAL sync policy %q: want \"never\" or \"always\"", s)
}

func (p SyncPolicy) String() string {
	switch p {
	case SyncNever:
		return "never"
	case SyncAlways:
		return "always"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// groupCommit tracks how much of the log is durable and lets concurrent
// callers share fsyncs.
//
// Every write to a segment gets the next number in a sequence (WAL.written,
// under the WAL's mu). A caller that needs its write durable waits until
// synced reaches its number. If no fsync is under way, the caller runs one
// itself, as leader: it notes the number of the last write and the current
// segment (under the WAL's mu, briefly), fsyncs that segment holding no
// lock at all, so others go on writing meanwhile, and then moves synced up
// to the noted number and wakes everyone. Writes up to that number are in
// the segment it fsynced or in older ones, which were fsynced before the
// log moved past them. A caller whose write came after the note is not
// covered; it waits for the next round, whose leader is one of the callers
// still waiting.
//
// All fields are guarded by mu. The WAL's mu may be taken while holding
// nothing or before mu, never while holding mu.
type groupCommit struct {
	mu      sync.Mutex
	cond    sync.Cond // broadcast when synced or failed moves; L is &mu
	syncing bool      // a leader is fsyncing
	synced  uint64    // writes numbered up to synced are durable
	// failed is the last write an fsync that failed should have covered,
	// and err its error. Once an fsync fails the segment never syncs again
	// (see segment.sync), so callers up to failed get err.
	failed uint64
	err    error
}

// markSynced records that every write up to seq is durable.
func (c *groupCommit) markSynced(seq uint64) {
	c.mu.Lock()
	if seq > c.synced {
		c.synced = seq
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// waitDurable returns once write seq is durable, fsyncing if no one else
// is. snapshot returns the number of the last write so far and the segment
// it went to; it is called without c.mu held.
func (c *groupCommit) waitDurable(seq uint64, snapshot func() (uint64, *segment)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.synced < seq {
		if c.failed >= seq {
			return c.err
		}
		if c.syncing {
			c.cond.Wait()
			continue
		}
		c.syncing = true
		c.mu.Unlock()
		target, seg := snapshot()
		err := seg.sync()
		c.mu.Lock()
		c.syncing = false
		if err != nil {
			c.failed, c.err = max(c.failed, target), err
		} else {
			c.synced = max(c.synced, target)
		}
		c.cond.Broadcast()
	}
	return nil
}
