package bucket

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kit/log/level"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/client"
)

// Open returns the bucket a configuration file in Thanos' format
// describes (type, config, prefix), with objstore's own factory, so every
// provider objstore has is available under the names Thanos documents.
func Open(file string, logger *slog.Logger) (objstore.Bucket, error) {
	conf, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("object storage configuration: %w", err)
	}
	bkt, err := client.NewBucket(kitLogger{logger}, conf, "strata", nil)
	if err != nil {
		return nil, fmt.Errorf("object storage configuration %s: %w", file, err)
	}
	return bkt, nil
}

// kitLogger passes objstore's go-kit log lines to slog.
type kitLogger struct{ l *slog.Logger }

func (k kitLogger) Log(keyvals ...any) error {
	lvl, msg := slog.LevelInfo, ""
	var attrs []any
	for i := 0; i+1 < len(keyvals); i += 2 {
		key := fmt.Sprint(keyvals[i])
		switch v := keyvals[i+1]; key {
		case "msg":
			msg = fmt.Sprint(v)
		case "level":
			switch fmt.Sprint(v) {
			case level.DebugValue().String():
				lvl = slog.LevelDebug
			case level.WarnValue().String():
				lvl = slog.LevelWarn
			case level.ErrorValue().String():
				lvl = slog.LevelError
			}
		default:
			attrs = append(attrs, key, v)
		}
	}
	k.l.Log(context.Background(), lvl, msg, attrs...)
	return nil
}
