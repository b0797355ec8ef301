package wal

// Internals for the tests of package wal_test, which test the WAL as its
// users see it.

// HeaderSize is the size of a frame's header.
const HeaderSize = headerSize
