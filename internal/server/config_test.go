package server

import (
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
)

// TestEffectiveConfig reads back what /api/v1/status/config shows with
// Prometheus' own configuration types: the flags' values, in the file's
// shape.
func TestEffectiveConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.OutOfOrderWindow = 30 * time.Minute
	cfg.RetentionTime = 0
	cfg.RetentionSize = 1 << 30
	cfg.MaxExemplars = 5
	cfg.OTLP.Translation.TranslationStrategy = otlptranslator.NoTranslation
	cfg.OTLP.Translation.PromoteResourceAttributes = []string{"region"}
	s, err := effectiveConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Storage config.StorageConfig `yaml:"storage"`
		OTLP    config.OTLPConfig    `yaml:"otlp"`
	}
	if err := yaml.UnmarshalStrict([]byte(s), &got); err != nil {
		t.Fatalf("%v in\n%s", err, s)
	}
	tsdb := got.Storage.TSDBConfig
	switch {
	case tsdb.OutOfOrderTimeWindow != (30 * time.Minute).Milliseconds():
		t.Errorf("out-of-order window %d ms, want 30m", tsdb.OutOfOrderTimeWindow)
	case tsdb.Retention.Time != 0 || tsdb.Retention.Size != 1<<30:
		t.Errorf("retention %+v, want 1GiB and no time", tsdb.Retention)
	case got.Storage.ExemplarsConfig.MaxExemplars != 5:
		t.Errorf("max exemplars %d, want 5", got.Storage.ExemplarsConfig.MaxExemplars)
	case got.OTLP.TranslationStrategy != otlptranslator.NoTranslation || len(got.OTLP.PromoteResourceAttributes) != 1:
		t.Errorf("otlp %+v", got.OTLP)
	}
}

func TestRetentionString(t *testing.T) {
	for _, c := range []struct {
		t    time.Duration
		size int64
		want string
	}{
		{15 * 24 * time.Hour, 0, "15d"},
		{0, 512 << 20, "512MiB"},
		{24 * time.Hour, 1 << 30, "1d or 1GiB"},
		{0, 0, ""},
	} {
		if got := retentionString(c.t, c.size); got != c.want {
			t.Errorf("retentionString(%s, %d) = %q, want %q", c.t, c.size, got, c.want)
		}
	}
}
