package etcdelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DialTimeout is the client's DialTimeout, the README's. The client connects lazily (New
// does not block); DialTimeout + 1 s is how long a session waits for its first keep-alive
// answer.
const DialTimeout = 5 * time.Second

// CheckEndpoints checks etcd endpoints given as host:port: at least one, each with a host
// and a port from 1 to 65535.
func CheckEndpoints(endpoints []string) error {
	if len(endpoints) == 0 {
		return errors.New("no etcd endpoint (want host:port[,host:port...])")
	}
	for _, ep := range endpoints {
		host, port, err := net.SplitHostPort(ep)
		if err != nil {
			return fmt.Errorf("etcd endpoint %q: want host:port", ep)
		}
		if p, err := strconv.Atoi(port); host == "" || err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("etcd endpoint %q: want host:port with a port from 1 to 65535", ep)
		}
	}
	return nil
}

// NewClient returns a client of the etcd members at endpoints (host:port). It does not
// connect: the first request does. The client's own warnings and errors go to log as
// "etcd-client" lines (nil: discarded). The caller closes the client.
func NewClient(endpoints []string, log *slog.Logger) (*clientv3.Client, error) {
	if err := CheckEndpoints(endpoints); err != nil {
		return nil, err
	}
	zl := zap.NewNop()
	if log != nil {
		zl = zap.New(slogCore{log: log})
	}
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: DialTimeout, Logger: zl})
}

// slogCore passes the etcd client's zap lines of level warn and above to a slog.Logger,
// so that a node's log stays one JSON format.
type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func (c slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c slogCore) With(fs []zapcore.Field) zapcore.Core {
	return slogCore{log: c.log, fields: append(slices.Clip(c.fields), fs...)}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(slices.Clip(c.fields), fs...) {
		f.AddTo(enc)
	}
	attrs := []slog.Attr{slog.String("message", e.Message)}
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	level := slog.LevelWarn
	if e.Level > zapcore.WarnLevel {
		level = slog.LevelError
	}
	c.log.LogAttrs(context.Background(), level, "etcd-client", attrs...)
	return nil
}

func (slogCore) Sync() error { return nil }
