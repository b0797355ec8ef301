// Package run holds the benchmark workloads (ingest, replay, query, disk)
// and runs them against one server or compares several.
//
// A server is either launched by the harness from a command line, which
// lets it measure the process (CPU time, peak RSS) and its data directory,
// or reached at a URL of a server already running. Either way it is only
// ever spoken to on the loopback interface.
package run
