package wal

// Internals for the tests of package wal_test, which cannot be in package
// wal because they import walfault, which imports wal.

// HeaderSize is the size of a frame's header.
const HeaderSize = headerSize
