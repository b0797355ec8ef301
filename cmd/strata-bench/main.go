// Command strata-bench benchmarks servers that speak Prometheus
// remote-write and the Prometheus query API: strata, Prometheus (with
// --web.enable-remote-write-receiver) or VictoriaMetrics. It is a separate
// binary so that no benchmark code is linked into the server.
//
//	strata-bench ingest --quick --url http://127.0.0.1:9201/api/v1/write
//	strata-bench replay --server-cmd "strata --listen-address {addr} --data-dir {data}"
//	strata-bench compare ingest --server a="..." --server b="..."
//
// See docs/benchmarks.md for every workload, figure and flag.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
