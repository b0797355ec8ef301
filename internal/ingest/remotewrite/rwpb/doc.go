// Package rwpb decodes Prometheus remote-write requests, 1.0
// (prometheus.WriteRequest, prompb) and 2.0 (io.prometheus.write.v2.Request,
// writev2), without allocating.
//
// The generated (gogo) decoders allocate every label string and every
// slice of every request. V1Request and V2Request instead hand out strings
// that alias the input buffer and slices cut from flat backing arrays that
// the request struct keeps and reuses: once a few requests have grown the
// arrays, Unmarshal allocates nothing. Keep one request struct per worker,
// or pool them (Reset before Put, so that a pooled struct keeps no
// buffer reachable).
//
// # Lifetime
//
// Strings and slices in a decoded request alias the buffer passed to
// Unmarshal and the struct's own backing arrays. They are valid until the
// next Unmarshal or Reset on the same struct, or until the buffer is
// reused, whichever comes first. Callers copy what they keep (as
// labels.ScratchBuilder and the head do anyway).
//
// # What is checked
//
// Unmarshal checks the protobuf wire format and nothing else: tags,
// varints (at most 10 bytes, at most 64 bits), lengths (within the
// enclosing message), fixed-size values (not truncated), wire types of
// known fields (a repeated scalar may come packed or unpacked, in any
// number of pieces), and packed fields (whole elements only). Unknown
// fields of wire types 0, 1, 2 and 5 are skipped. Every error wraps
// ErrInvalid and is a *DecodeError that says at which byte and in which
// field decoding stopped.
//
// It does not check what the caller must: that strings are UTF-8, that
// symbol refs are within Symbols (and that Symbols[0] is ""), that labels
// are sorted, unique and non-empty, that samples are ordered, that a
// histogram's spans, buckets and counts agree, that enum values are known.
// A repeated singular field takes its last value, and a repeated singular
// message (2.0 TimeSeries.metadata) merges, as protobuf requires.
//
// # Differences from the generated decoders
//
// On every input both accept, the two agree on every value (FuzzV1 and
// FuzzV2 check this against prompb and writev2). Where they differ:
//
//   - Groups (wire types 3 and 4) are rejected. The generated code skips an
//     unknown group; proto3 has no groups and no remote-write sender writes
//     them, so one in a request is corruption.
//   - A 10-byte varint whose last byte is above 1 (a value over 64 bits) is
//     rejected; the generated code drops the high bits.
//   - A field number above 2^29-1, the largest protobuf allows, is
//     rejected. The generated code truncates the number to 32 bits, so that
//     2^32+1 reads as field 1.
//   - A packed field that does not hold whole elements (doubles whose
//     length is not a multiple of 8, a varint that runs past the end of the
//     field) is rejected. The generated code reads the last element on into
//     the bytes after the field and carries on from there.
//   - Unknown fields are dropped, not kept (XXX_unrecognized).
//   - Unmarshal replaces the request's contents; the generated Unmarshal
//     appends to what the struct held.
//   - Histogram.IsFloat also holds when no count was sent and the zero
//     count is zero_count_float; prompb's IsFloatHistogram looks at the
//     count alone. See Histogram.
package rwpb
