package bucket

import (
	"encoding/json"

	"github.com/strata-db/strata/internal/block"
)

// metaFilename is the object a block in a bucket is complete with.
const metaFilename = "meta.json"

// Meta is a block's meta.json as uploaded: the block's own, and the
// section Thanos' tools read.
type Meta struct {
	block.Meta
	Thanos ThanosMeta `json:"thanos"`
}

// ThanosMeta is the "thanos" section of a meta.json, in the shape of
// Thanos' metadata.Thanos.
type ThanosMeta struct {
	// Labels are the external labels of the node that wrote the block.
	Labels     map[string]string `json:"labels"`
	Downsample struct {
		Resolution int64 `json:"resolution"`
	} `json:"downsample"`
	// Source names what wrote the block.
	Source string `json:"source"`
	// Files are the block's files, meta.json excepted, with their
	// sizes, so a reader needs no request to learn them.
	Files []File `json:"files,omitempty"`
}

// File is one file of a block.
type File struct {
	RelPath   string `json:"rel_path"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
}

// source is ThanosMeta.Source for the blocks strata uploads.
const source = "strata"

// encodeMeta returns the meta.json of a block to upload.
func encodeMeta(m block.Meta, external map[string]string, files []File) ([]byte, error) {
	bm := Meta{Meta: m}
	bm.Thanos.Labels = external
	bm.Thanos.Source = source
	bm.Thanos.Files = files
	return json.MarshalIndent(bm, "", "\t")
}
