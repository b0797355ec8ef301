package rwpb

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

func TestErrors(t *testing.T) {
	label := pb(nil).str(1, "a").str(2, "b")
	series := func(fields pb) pb { return pb(nil).bytes(1, fields) }                       // 1.0 timeseries
	hist := func(fields pb) pb { return series(pb(nil).bytes(1, label).bytes(4, fields)) } // 1.0 histogram
	series2 := func(fields pb) pb { return pb(nil).str(4, "").bytes(5, fields) }           // 2.0 timeseries
	tooLong := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x01}
	overflow := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}

	for _, tc := range []struct {
		name  string
		v2    bool
		in    []byte
		kind  errKind
		off   int
		field string
		// gogoAccepts marks the documented differences: inputs the
		// generated decoder takes and this package rejects.
		gogoAccepts bool
	}{
		{name: "truncated tag", in: []byte{0x80}, kind: kindTruncated, off: 0},
		{name: "truncated length", in: []byte{0x0a}, kind: kindTruncated, off: 1, field: "timeseries"},
		{name: "length past end", in: []byte{0x0a, 0x05, 0x00}, kind: kindLength, off: 1, field: "timeseries"},
		{name: "huge length", in: append([]byte{0x0a}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), kind: kindLength, off: 1, field: "timeseries"},
		{name: "wrong wire type", in: pb(nil).varint(1, 0), kind: kindWireType, off: 0, field: "timeseries"},
		{name: "wrong wire type nested", in: series(pb(nil).bytes(1, label).double(2, 1)), kind: kindWireType, off: 10, field: "timeseries[0].samples"},
		{name: "label truncated", in: series(pb(nil).bytes(1, label).bytes(1, []byte{0x0a, 0x09, 'x'})), kind: kindLength, off: 13, field: "timeseries[0].labels[1].name"},
		{name: "sample truncated double", in: series(pb(nil).bytes(2, []byte{0x09, 1, 2, 3})), kind: kindTruncated, off: 5, field: "timeseries[0].samples[0].value"},
		{name: "varint too long", in: append(pb(nil).tag(7, wireVarint), tooLong...), kind: kindVarintTooLong, off: 1, field: "field 7"},
		{name: "varint too long in known field", in: series(append(pb(nil).bytes(1, label).tag(2, wireBytes), append([]byte{12, 0x10}, tooLong...)...)), kind: kindVarintTooLong, off: 13, field: "timeseries[0].samples[0].timestamp"},
		{name: "varint over 64 bits", in: append(pb(nil).tag(7, wireVarint), overflow...), kind: kindVarintOverflow, off: 1, field: "field 7", gogoAccepts: true},
		{name: "field number 0", in: []byte{0x00, 0x00}, kind: kindFieldZero, off: 0},
		{name: "field number above 2^29-1", in: pb(nil).varint(1<<29, 1), kind: kindFieldRange, off: 0, gogoAccepts: true},
		{name: "field number 2^32+1 aliasing field 1", in: pb(nil).bytes(1<<32+1, nil), kind: kindFieldRange, off: 0, gogoAccepts: true},
		{name: "start group", in: pb(nil).tag(7, wireStartGroup).varint(1, 1).tag(7, wireEndGroup), kind: kindGroup, off: 0, field: "field 7", gogoAccepts: true},
		{name: "end group", in: pb(nil).tag(7, wireEndGroup), kind: kindGroup, off: 0, field: "field 7"},
		{name: "wire type 6", in: pb(nil).tag(7, 6), kind: kindBadWireType, off: 0, field: "field 7"},
		{name: "unknown fixed64 truncated", in: append(pb(nil).tag(7, wireFixed64), 1, 2), kind: kindTruncated, off: 1, field: "field 7"},
		{name: "unknown fixed32 truncated", in: append(pb(nil).tag(7, wireFixed32), 1, 2), kind: kindTruncated, off: 1, field: "field 7"},
		{name: "unknown bytes past end", in: append(pb(nil).tag(7, wireBytes), 3, 1), kind: kindLength, off: 1, field: "field 7"},
		// In the packed cases, a byte after the field completes the value
		// the generated decoder reads on past the field's end, so that it
		// accepts the input.
		{name: "packed doubles not a multiple of 8", in: hist(append(pb(nil).bytes(13, make([]byte, 7)), 0).varint(15, 1)), kind: kindPacked, off: 13, field: "timeseries[0].histograms[0].positive_counts", gogoAccepts: true},
		{name: "packed varint past end of field", in: hist(append(pb(nil).bytes(12, []byte{0x80}), 0x01).varint(15, 1)), kind: kindPacked, off: 14, field: "timeseries[0].histograms[0].positive_deltas", gogoAccepts: true},
		{name: "span wrong wire type", in: hist(pb(nil).bytes(11, pb(nil).fixed32(1, 1))), kind: kindWireType, off: 14, field: "timeseries[0].histograms[0].positive_spans[0].offset"},
		{name: "second span truncated", in: hist(pb(nil).bytes(8, nil).bytes(8, []byte{0x08})), kind: kindTruncated, off: 17, field: "timeseries[0].histograms[0].negative_spans[1].offset"},
		{name: "histogram wrong wire type", in: hist(pb(nil).varint(17, 1).double(14, 1)), kind: kindWireType, off: 15, field: "timeseries[0].histograms[0].reset_hint"},
		{name: "metadata truncated", in: pb(nil).bytes(3, []byte{0x12, 0x02}), kind: kindLength, off: 3, field: "metadata[0].metric_family_name"},

		{name: "v2 symbol past end", v2: true, in: pb(nil).str(4, "").str(4, "a")[:4], kind: kindLength, off: 3, field: "symbols[1]"},
		{name: "v2 refs packed varint past end", v2: true, in: series2(append(pb(nil).bytes(1, []byte{0x81}), 0x01)), kind: kindPacked, off: 6, field: "timeseries[0].labels_refs", gogoAccepts: true},
		{name: "v2 refs wrong wire type", v2: true, in: series2(pb(nil).double(1, 1)), kind: kindWireType, off: 4, field: "timeseries[0].labels_refs"},
		{name: "v2 start timestamp wrong wire type", v2: true, in: series2(pb(nil).bytes(2, pb(nil).double(3, 1))), kind: kindWireType, off: 6, field: "timeseries[0].samples[0].start_timestamp"},
		{name: "v2 histogram start timestamp wrong wire type", v2: true, in: series2(pb(nil).bytes(3, pb(nil).double(17, 1))), kind: kindWireType, off: 6, field: "timeseries[0].histograms[0].start_timestamp"},
		{name: "v2 metadata truncated", v2: true, in: series2(pb(nil).bytes(5, []byte{0x18})), kind: kindTruncated, off: 7, field: "timeseries[0].metadata.help_ref"},
		{name: "v2 exemplar refs", v2: true, in: series2(pb(nil).bytes(4, pb(nil).varint(1, 1).bytes(1, []byte{0xff}))), kind: kindPacked, off: 10, field: "timeseries[0].exemplars[0].labels_refs", gogoAccepts: false},
		{name: "v2 group", v2: true, in: pb(nil).tag(1, wireStartGroup).tag(1, wireEndGroup), kind: kindGroup, off: 0, field: "field 1", gogoAccepts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				err, gerr error
				r1        V1Request
				r2        V2Request
			)
			// Decode a request first, so that the failed Unmarshal must
			// also leave the struct empty.
			if tc.v2 {
				checkV2(t, &r2, marshal(t, realisticV2(3, 2)))
				err = r2.Unmarshal(tc.in)
				gerr = new(writev2.Request).Unmarshal(tc.in)
				if len(r2.Series)+len(r2.Symbols) > 0 {
					t.Errorf("failed Unmarshal left %d series, %d symbols", len(r2.Series), len(r2.Symbols))
				}
			} else {
				checkV1(t, &r1, marshal(t, realisticV1(3, 2)))
				err = r1.Unmarshal(tc.in)
				gerr = new(prompb.WriteRequest).Unmarshal(tc.in)
				if len(r1.Series)+len(r1.Metadata) > 0 {
					t.Errorf("failed Unmarshal left %d series, %d metadata", len(r1.Series), len(r1.Metadata))
				}
			}
			if err == nil {
				t.Fatalf("no error for %x", tc.in)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%v is no *DecodeError", err)
			}
			if de.kind != tc.kind || de.Offset != tc.off || de.Field != tc.field {
				t.Errorf("got kind %d at %d in %q, want kind %d at %d in %q: %v", de.kind, de.Offset, de.Field, tc.kind, tc.off, tc.field, err)
			}
			if !strings.Contains(err.Error(), de.Field) || !strings.Contains(err.Error(), "remote-write") {
				t.Errorf("message %q lacks the field or the request", err)
			}
			if (gerr == nil) != tc.gogoAccepts {
				t.Errorf("generated decoder: error %v, documented to accept: %v", gerr, tc.gogoAccepts)
			}
			t.Log(err)
		})
	}
}

func TestVarint(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		v    uint64
		next int
	}{
		{[]byte{0}, 0, 1},
		{[]byte{0x7f}, 127, 1},
		{[]byte{0x80, 0x01}, 128, 2},
		{[]byte{0x80, 0x00}, 0, 2}, // not minimal, but valid
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1<<64 - 1, 10},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 1 << 63, 10},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 0, varintOverflow},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00}, 0, varintTooLong},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, varintTooLong},
		{[]byte{}, 0, varintTruncated},
		{[]byte{0x80}, 0, varintTruncated},
		{[]byte{0xff, 0xff, 0xff}, 0, varintTruncated},
	} {
		v, next := varint(tc.in, 0)
		if v != tc.v || next != tc.next {
			t.Errorf("varint(%x) = %d, %d; want %d, %d", tc.in, v, next, tc.v, tc.next)
		}
	}
	if _, next := varint([]byte{1}, -1); next != varintTruncated {
		t.Errorf("varint at -1: %d", next)
	}
}

func TestZigzag(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 2, -2, 1<<31 - 1, -1 << 31, 1<<63 - 1, -1 << 63} {
		if got := zigzag64(zz(v)); got != v {
			t.Errorf("zigzag64(zz(%d)) = %d", v, got)
		}
		if v == int64(int32(v)) {
			if got := zigzag32(zz(v)); int64(got) != v {
				t.Errorf("zigzag32(zz(%d)) = %d", v, got)
			}
		}
	}
	// A sint32 is the low 32 bits of its varint, as the generated code
	// takes it.
	if got := zigzag32(1<<32 | 3); got != -2 {
		t.Errorf("zigzag32 of a 33-bit varint = %d, want -2", got)
	}
}
