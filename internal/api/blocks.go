package api

import (
	"net/http"
	"strconv"
)

// BlocksSource answers /api/v1/status/blocks, strata's own endpoint (the
// UI's TSDB page reads it): the blocks on disk, oldest first.
type BlocksSource interface {
	Blocks() []BlockInfo
}

// BlockInfo is a block as /api/v1/status/blocks shows it, its fields
// named as in meta.json.
type BlockInfo struct {
	ULID                    string
	MinTime, MaxTime        int64 // milliseconds, inclusive
	Series, Samples, Chunks uint64
	Bytes                   int64
	Level                   int
}

type blockList []BlockInfo

func (a *API) serveBlocks(*http.Request) result {
	if a.blocks == nil {
		return result{data: blockList{}}
	}
	return result{data: blockList(a.blocks.Blocks())}
}

func (l blockList) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '[')
	for i, b := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"ulid":`...)
		dst = appendString(dst, b.ULID)
		for _, f := range [...]struct {
			key string
			v   int64
		}{
			{"minTime", b.MinTime}, {"maxTime", b.MaxTime},
			{"numSeries", int64(b.Series)}, {"numSamples", int64(b.Samples)}, {"numChunks", int64(b.Chunks)},
			{"sizeBytes", b.Bytes}, {"level", int64(b.Level)},
		} {
			dst = append(dst, ',')
			dst = appendString(dst, f.key)
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, f.v, 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}
