package server

import (
	"fmt"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"go.yaml.in/yaml/v2"
)

// effectiveConfig is what /api/v1/status/config shows without a
// configuration file: the parts of Prometheus' configuration file strata
// honours, with the values its flags gave them, in the file's own shape.
func effectiveConfig(cfg Config) (string, error) {
	c := struct {
		Global  global               `yaml:"global,omitempty"`
		Storage config.StorageConfig `yaml:"storage"`
		OTLP    config.OTLPConfig    `yaml:"otlp"`
	}{
		Global:  global{ExternalLabels: cfg.ExternalLabels},
		Storage: storageConfig(cfg),
		OTLP:    cfg.OTLP.Translation,
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the configuration: %w", err)
	}
	return string(b), nil
}

// storageConfig is the storage section of Prometheus' configuration
// file that gives what cfg does.
func storageConfig(cfg Config) config.StorageConfig {
	return config.StorageConfig{
		TSDBConfig: &config.TSDBConfig{
			OutOfOrderTimeWindow:     cfg.OutOfOrderWindow.Milliseconds(),
			OutOfOrderTimeWindowFlag: model.Duration(cfg.OutOfOrderWindow),
			Retention:                &config.TSDBRetentionConfig{Time: model.Duration(cfg.RetentionTime), Size: units.Base2Bytes(cfg.RetentionSize)},
		},
		ExemplarsConfig: &config.ExemplarsConfig{MaxExemplars: int64(cfg.MaxExemplars)},
	}
}

// global is the part of the file's global section strata honours.
// Prometheus' own GlobalConfig would show its scrape and evaluation
// defaults too, which strata does not use.
type global struct {
	ExternalLabels labels.Labels `yaml:"external_labels,omitempty"`
}

// retentionString is the retention as Prometheus' runtimeinfo gives it:
// "15d", "512MiB", "15d or 512MiB", or nothing.
func retentionString(t time.Duration, size int64) string {
	switch {
	case t > 0 && size > 0:
		return model.Duration(t).String() + " or " + units.Base2Bytes(size).String()
	case t > 0:
		return model.Duration(t).String()
	case size > 0:
		return units.Base2Bytes(size).String()
	}
	return ""
}
