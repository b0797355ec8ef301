package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestCompactFlags checks that strata compact takes Prometheus-style
// durations and refuses what it cannot use with the flag's name.
func TestCompactFlags(t *testing.T) {
	cfg, _, err := parseCompactFlags([]string{"--objstore.config-file", "b.yml", "--retention.time", "1y", "--delete-delay", "2d", "--wait"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention != 365*24*time.Hour || cfg.DeleteDelay != 48*time.Hour || !cfg.Wait || cfg.ObjstoreConfigFile != "b.yml" {
		t.Errorf("config %+v", cfg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--objstore.config-file is required"},
		{[]string{"--objstore.config-file", "b.yml", "--retention.time", "a year"}, "--retention.time"},
		{[]string{"--objstore.config-file", "b.yml", "--delete-delay", "-1h"}, "--delete-delay"},
		{[]string{"--objstore.config-file", "b.yml", "extra"}, "unexpected extra"},
	} {
		if _, _, err := parseCompactFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
