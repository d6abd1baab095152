package logging

import (
	"fmt"
	"io"
	"strconv"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// New returns a zap-backed logr.Logger writing to w. format is "json" or "text"; level is
// "debug", "info", "warn", "error" or a verbosity number (2 shows V(2) lines and below). logr has
// info and error lines only, so "warn" shows what "error" shows; it is accepted because it is the
// level other tools (and their operators' habits) set.
func New(w io.Writer, format, level string) (logr.Logger, error) {
	lvl, ok := levels[level]
	if !ok {
		// logr verbosity V(n) maps to zap level -n.
		n, err := strconv.Atoi(level)
		if err != nil || n < 0 || n > 127 {
			return logr.Discard(), fmt.Errorf("--log-level must be debug, info, warn, error or a verbosity 0-127, not %q", level)
		}
		lvl = zapcore.Level(-n)
	}
	opts := []crzap.Opts{crzap.WriteTo(w), crzap.Level(lvl), crzap.StacktraceLevel(zapcore.PanicLevel)}
	switch format {
	case "json":
		opts = append(opts, crzap.UseDevMode(false), crzap.JSONEncoder(func(c *zapcore.EncoderConfig) {
			c.TimeKey = "ts"
			c.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		}))
	case "text":
		opts = append(opts, crzap.ConsoleEncoder(func(c *zapcore.EncoderConfig) {
			c.EncodeTime = zapcore.RFC3339TimeEncoder
		}))
	default:
		return logr.Discard(), fmt.Errorf("--log-format must be json or text, not %q", format)
	}
	return crzap.New(opts...), nil
}

var levels = map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel}
