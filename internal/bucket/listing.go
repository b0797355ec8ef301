package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/thanos-io/objstore"
)

// deletionMarkFilename is the object that marks a block for deletion, as
// Thanos' compactor writes it: readers stop using the block, and it is
// deleted once the mark is older than the compactor's delay.
const deletionMarkFilename = "deletion-mark.json"

// deletionMark is a deletion-mark.json, in the shape of Thanos'
// metadata.DeletionMark.
type deletionMark struct {
	ID ulid.ULID `json:"id"`
	// DeletionTime is when the block was marked, in Unix seconds.
	DeletionTime int64  `json:"deletion_time"`
	Version      int    `json:"version"`
	Details      string `json:"details,omitempty"`
}

const deletionMarkVersion = 1

// listing is what one listing of a bucket tells of its blocks.
type listing struct {
	// objects holds every object below a block's directory, by block.
	objects map[ulid.ULID][]string
	// blocks are the directories with a meta.json, marked those with a
	// deletion-mark.json.
	blocks, marked map[ulid.ULID]bool
}

// listBucket lists every object of the bucket's block directories in
// one recursive listing: on S3 a request per thousand objects, where a
// look at each block's marks would take one per block.
func listBucket(ctx context.Context, bkt objstore.BucketReader) (listing, error) {
	l := listing{objects: map[ulid.ULID][]string{}, blocks: map[ulid.ULID]bool{}, marked: map[ulid.ULID]bool{}}
	err := bkt.Iter(ctx, "", func(name string) error {
		dir, rest, ok := strings.Cut(name, "/")
		id, err := ulid.ParseStrict(dir)
		if !ok || rest == "" || err != nil {
			return nil
		}
		l.objects[id] = append(l.objects[id], name)
		switch rest {
		case metaFilename:
			l.blocks[id] = true
		case deletionMarkFilename:
			l.marked[id] = true
		}
		return nil
	}, objstore.WithRecursiveIter())
	if err != nil {
		return listing{}, fmt.Errorf("list bucket: %w", err)
	}
	return l, nil
}

// readMeta reads a block's meta.json from the bucket, and returns it
// and its bytes; errNotBlock if it has none.
func readMeta(ctx context.Context, bkt objstore.BucketReader, id ulid.ULID) (Meta, []byte, error) {
	name := path.Join(id.String(), metaFilename)
	raw, err := readObject(ctx, bkt, name)
	if bkt.IsObjNotFoundErr(err) {
		return Meta{}, nil, errNotBlock
	}
	if err != nil {
		return Meta{}, nil, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	if m.ULID != id {
		return Meta{}, nil, fmt.Errorf("%s: holds the meta of block %s", name, m.ULID)
	}
	return m, raw, nil
}

// readDeletionMark reads a block's deletion-mark.json.
func readDeletionMark(ctx context.Context, bkt objstore.BucketReader, id ulid.ULID) (deletionMark, error) {
	name := path.Join(id.String(), deletionMarkFilename)
	raw, err := readObject(ctx, bkt, name)
	if err != nil {
		return deletionMark{}, err
	}
	var m deletionMark
	if err := json.Unmarshal(raw, &m); err != nil {
		return deletionMark{}, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// markForDeletion uploads a block's deletion-mark.json.
func markForDeletion(ctx context.Context, bkt objstore.Bucket, id ulid.ULID, now time.Time, details string) error {
	b, err := json.MarshalIndent(deletionMark{ID: id, DeletionTime: now.Unix(), Version: deletionMarkVersion, Details: details}, "", "\t")
	if err != nil {
		return err
	}
	name := path.Join(id.String(), deletionMarkFilename)
	if err := bkt.Upload(ctx, name, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}

func readObject(ctx context.Context, bkt objstore.BucketReader, name string) ([]byte, error) {
	r, err := bkt.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
