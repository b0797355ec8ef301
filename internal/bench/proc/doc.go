// Package proc launches the server under test from a command line, stops
// or kills it, and reads what Linux knows about it from /proc: CPU time
// and resident memory.
package proc
