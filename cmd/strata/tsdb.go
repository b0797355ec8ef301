package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/block"
)

// runTSDB runs `strata tsdb <command>`, the tools that read a data
// directory, and returns the exit code.
func runTSDB(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: strata tsdb list --data-dir DIR\n       strata tsdb analyze --data-dir DIR [--block ULID] [--limit N]")
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	var err error
	switch args[0] {
	case "list":
		err = tsdbList(args[1:], stdout)
	case "analyze":
		err = tsdbAnalyze(args[1:], stdout)
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	default:
		fmt.Fprintf(stderr, "strata tsdb: unknown command %q\n", args[0])
		usage()
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "strata tsdb:", err)
		return 1
	}
	return 0
}

// tsdbList prints a line per block of a data directory. It reads only
// meta.json and file sizes, so it is safe while the server runs.
func tsdbList(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("strata tsdb list", flag.ContinueOnError)
	dir := fs.String("data-dir", "./data", "the data directory")
	humanTimes := fs.Bool("human", true, "print times as RFC 3339 rather than milliseconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ids, err := blockIDs(*dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK ULID\tMIN TIME\tMAX TIME\tDURATION\tSERIES\tSAMPLES\tCHUNKS\tBYTES\tLEVEL")
	for _, id := range ids {
		bdir := filepath.Join(*dir, id)
		m, err := block.ReadMeta(block.LocalFiles(bdir))
		var size int64
		if err == nil {
			size, err = dirBytes(bdir)
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted by retention or compaction meanwhile
		}
		if err != nil {
			return fmt.Errorf("block %s: %w", id, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", m.ULID, fmtTime(m.MinTime, *humanTimes), fmtTime(m.MaxTime, *humanTimes),
			time.Duration(m.MaxTime-m.MinTime+1)*time.Millisecond, m.Stats.Series, m.Stats.Samples, m.Stats.Chunks, size, m.Level)
	}
	return tw.Flush()
}

func fmtTime(ms int64, human bool) string {
	if !human {
		return fmt.Sprint(ms)
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// blockIDs returns the names of the block directories in dir, oldest
// first (ULIDs sort by creation time).
func blockIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if _, err := ulid.ParseStrict(e.Name()); e.IsDir() && err == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// dirBytes returns the bytes of the files below dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// tsdbAnalyze prints the cardinality of a block: the metric names, label
// names and label pairs with the most series. It reads the block's index
// only, so it is safe while the server runs.
func tsdbAnalyze(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("strata tsdb analyze", flag.ContinueOnError)
	dir := fs.String("data-dir", "./data", "the data directory")
	id := fs.String("block", "", "ULID of the block to analyze (default: the newest)")
	limit := fs.Int("limit", 20, "entries per list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *limit < 1 {
		return fmt.Errorf("--limit must be at least 1")
	}
	b, err := openAnalyzed(*dir, *id)
	if err != nil {
		return err
	}
	defer b.Close()
	m := b.Meta()
	q, err := b.Querier(m.MinTime, m.MaxTime)
	if err != nil {
		return err
	}
	defer q.Close()
	var (
		byName  = map[string]int{}
		values  = map[string]map[string]struct{}{}
		byPair  = map[string]int{}
		nseries int
	)
	ss := q.Select(context.Background(), false, &promstorage.SelectHints{Start: m.MinTime, End: m.MaxTime, Func: "series"},
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	for ss.Next() {
		nseries++
		ss.At().Labels().Range(func(l labels.Label) {
			if l.Name == labels.MetricName {
				byName[l.Value]++
			}
			if values[l.Name] == nil {
				values[l.Name] = map[string]struct{}{}
			}
			values[l.Name][l.Value] = struct{}{}
			byPair[l.Name+"="+l.Value]++
		})
	}
	if err := ss.Err(); err != nil {
		return err
	}
	byValues := map[string]int{}
	for name, vals := range values {
		byValues[name] = len(vals)
	}
	fmt.Fprintf(out, "Block %s: %s to %s, %d series, %d samples, %d chunks\n",
		m.ULID, fmtTime(m.MinTime, true), fmtTime(m.MaxTime, true), nseries, m.Stats.Samples, m.Stats.Chunks)
	for _, l := range []struct {
		title  string
		counts map[string]int
	}{
		{"Metric names with the most series", byName},
		{"Label names with the most values", byValues},
		{"Label pairs in the most series", byPair},
	} {
		fmt.Fprintf(out, "\n%s:\n", l.title)
		for _, e := range topN(l.counts, *limit) {
			fmt.Fprintf(out, "%10d %s\n", e.n, e.key)
		}
	}
	return nil
}

// openAnalyzed opens block id of dir, or the newest block if id is
// empty. The newest block may be merged into another and deleted before
// it is opened: then the newest is taken again.
func openAnalyzed(dir, id string) (*block.Block, error) {
	if id != "" {
		return block.Open(block.LocalFiles(filepath.Join(dir, id)))
	}
	for {
		ids, err := blockIDs(dir)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("no blocks in %s (the head's cardinality is at /api/v1/status/tsdb)", dir)
		}
		bdir := filepath.Join(dir, ids[len(ids)-1])
		b, err := block.Open(block.LocalFiles(bdir))
		if err != nil {
			if _, serr := os.Stat(bdir); errors.Is(serr, os.ErrNotExist) {
				continue
			}
		}
		return b, err
	}
}

type keyCount struct {
	key string
	n   int
}

// topN returns the n entries with the highest counts, ties by key.
func topN(counts map[string]int, n int) []keyCount {
	out := make([]keyCount, 0, len(counts))
	for k, c := range counts {
		out = append(out, keyCount{k, c})
	}
	slices.SortFunc(out, func(a, b keyCount) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.key, b.key)
	})
	return out[:min(n, len(out))]
}
