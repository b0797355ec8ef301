package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/block"
)

// tsdbHelp is what `strata tsdb --help` says before the commands.
const tsdbHelp = "Tools for a strata data directory. list and analyze only read: they are safe while the server runs. backup copies a snapshot to object storage, restore makes a data directory hold the last backup, create-blocks-from writes blocks from a file of samples."

// runTSDB runs `strata tsdb <command>`, the tools that read a data
// directory, and returns the exit code.
func runTSDB(args []string, stdout, stderr io.Writer) int {
	app := newApp("strata tsdb", tsdbHelp, stdout)
	list := app.Command("list", "Print a line per block of a data directory: its time range, series, samples, chunks, bytes and compaction level.")
	var lo listOptions
	lo.dir, lo.human = "./data", true
	flags{list}.String(&lo.dir, "data-dir", "the data directory")
	flags{list}.Bool(&lo.human, "human", "print times as RFC 3339 rather than milliseconds")
	analyze := app.Command("analyze", "Print the cardinality of a block: the metric names, label names and label pairs with the most series.")
	var ao analyzeOptions
	ao.dir, ao.limit = "./data", 20
	flags{analyze}.String(&ao.dir, "data-dir", "the data directory")
	flags{analyze}.String(&ao.block, "block", "ULID of the block to analyze (default: the newest)")
	flags{analyze}.Int(&ao.limit, "limit", "entries per list")
	backup := app.Command("backup", "Copy a snapshot's blocks to a bucket, sending only what its last backup lacks and then deleting blocks of earlier backups (see README, \"Backups\").")
	bo := backupOptions{dataDir: "./data"}
	flags{backup}.String(&bo.objstoreConfig, "objstore.config-file", "bucket configuration file in Thanos' format (required); its prefix keeps backups apart from the blocks nodes upload")
	flags{backup}.String(&bo.snapshot, "snapshot", "snapshot directory to back up, such as <data-dir>/snapshots/<name> from POST /api/v1/admin/tsdb/snapshot")
	flags{backup}.String(&bo.createURL, "snapshot.create-url", "URL of a running strata with --web.enable-admin-api, such as http://localhost:9201: a snapshot is made there, backed up from --data-dir, and removed")
	flags{backup}.String(&bo.dataDir, "data-dir", "the data directory of the strata at --snapshot.create-url")
	flags{backup}.Bool(&bo.keepSnapshot, "snapshot.keep", "keep the snapshot that --snapshot.create-url made")
	restore := app.Command("restore", "Make a data directory hold the blocks of a bucket's last backup and nothing else, fetching only the blocks it lacks; start strata on it afterwards.")
	ro := restoreOptions{dataDir: "./data"}
	flags{restore}.String(&ro.objstoreConfig, "objstore.config-file", "bucket configuration file in Thanos' format (required), as given to backup")
	flags{restore}.String(&ro.dataDir, "data-dir", "the data directory to restore into; it must not hold a write-ahead log")
	create := app.Command("create-blocks-from", "Write blocks from a file of samples, without the head, as promtool's command of that name does: history too old for the head goes in this way.")
	bf := backfillOptions{blockDuration: "2h"}
	createFormats := map[string]*kingpin.CmdClause{
		formatOpenMetrics: create.Command(formatOpenMetrics, "From an OpenMetrics text exposition, every sample with a timestamp (in seconds, as OpenMetrics has them), ending with # EOF."),
		formatJSONLines:   create.Command(formatJSONLines, "From VictoriaMetrics' JSON lines, what /api/v1/export writes (gzipped if the name ends in .gz)."),
	}
	for _, c := range createFormats {
		c.Arg("input", "the file to read").Required().StringVar(&bf.input)
		c.Arg("output", "the directory to write the blocks to: the backfill directory of a data directory, which strata takes them from, or the data directory of a strata not running").Default("./data/backfill").StringVar(&bf.output)
		flags{c}.String(&bf.blockDuration, "max-block-duration", "range of each block written, aligned as the head's blocks are; larger blocks take fewer passes over the input and more memory")
	}
	logLevel := "info"
	for _, c := range []flagger{backup, restore, createFormats[formatOpenMetrics], createFormats[formatJSONLines]} {
		flags{c}.String(&logLevel, "log.level", "log level: debug, info, warn or error")
	}
	cmd, err := parse(app, args)
	if errors.Is(err, errPrinted) {
		return 0
	}
	var level slog.Level
	if err == nil {
		if err = level.UnmarshalText([]byte(logLevel)); err != nil {
			err = fmt.Errorf("--log.level: %w", err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "strata tsdb: %v (see strata tsdb --help)\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case list.FullCommand():
		err = tsdbList(lo, stdout)
	case analyze.FullCommand():
		err = tsdbAnalyze(ao, stdout)
	case backup.FullCommand():
		err = tsdbBackup(ctx, bo, logger, stdout)
	case restore.FullCommand():
		err = tsdbRestore(ctx, ro, logger, stdout)
	case createFormats[formatOpenMetrics].FullCommand(), createFormats[formatJSONLines].FullCommand():
		bf.format = strings.TrimPrefix(cmd, create.FullCommand()+" ")
		err = tsdbCreateBlocks(ctx, bf, logger, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "strata tsdb:", err)
		return 1
	}
	return 0
}

type listOptions struct {
	dir   string
	human bool
}

// tsdbList prints a line per block of a data directory. It reads only
// meta.json and file sizes, so it is safe while the server runs.
func tsdbList(o listOptions, out io.Writer) error {
	ids, err := blockIDs(o.dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK ULID\tMIN TIME\tMAX TIME\tDURATION\tSERIES\tSAMPLES\tCHUNKS\tBYTES\tLEVEL")
	for _, id := range ids {
		bdir := filepath.Join(o.dir, id)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", m.ULID, fmtTime(m.MinTime, o.human), fmtTime(m.MaxTime, o.human),
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

type analyzeOptions struct {
	dir, block string
	limit      int
}

// tsdbAnalyze prints the cardinality of a block: the metric names, label
// names and label pairs with the most series. It reads the block's index
// only, so it is safe while the server runs.
func tsdbAnalyze(o analyzeOptions, out io.Writer) error {
	if o.limit < 1 {
		return fmt.Errorf("--limit must be at least 1")
	}
	b, err := openAnalyzed(o.dir, o.block)
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
		for _, e := range topN(l.counts, o.limit) {
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
