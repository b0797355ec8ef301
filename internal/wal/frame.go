package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// A frame is one record on disk: a header of headerSize bytes, the 32-bit
// little-endian payload length then the CRC-32C of the payload, followed by
// the payload itself. See docs/format/wal.md.
const headerSize = 8

// castagnoli is CRC-32C, which amd64 and arm64 compute in hardware at many
// GB/s, so checksumming costs little next to the write itself.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the frame of rec to buf.
func appendFrame(buf, rec []byte) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(rec)))
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(rec, castagnoli))
	return append(buf, rec...)
}

// parseHeader returns the payload length and checksum a frame header holds.
func parseHeader(h []byte) (length, crc uint32) {
	return binary.LittleEndian.Uint32(h[0:4]), binary.LittleEndian.Uint32(h[4:8])
}
