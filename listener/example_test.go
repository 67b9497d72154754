package listener_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
)

// Example wires a store, a source and a listener as a node does for one leader term.
// (It needs a running Redis and source, so it is compiled but not run.)
func Example() {
	client := listener.NewRedisClient("127.0.0.1:6379") // MaxRetries: -1
	defer client.Close()
	store, err := listener.NewRedisStore(client, listener.StoreConfig{
		Node:     "n1",
		Recorder: history.NewRecorder(os.Stdout),
	})
	if err != nil {
		panic(err)
	}
	src, err := listener.NewHTTPSource(listener.HTTPSourceConfig{BaseURL: "http://127.0.0.1:8000"})
	if err != nil {
		panic(err)
	}
	l, err := listener.New(listener.Config{
		Store:  store,
		Source: src,
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
	if err != nil {
		panic(err)
	}

	// termCtx is cancelled when the term ends; token is the term's fencing token.
	termCtx, token := context.Background(), int64(7)
	if err := l.Run(termCtx, token); errors.Is(err, listener.ErrStaleToken) {
		fmt.Fprintln(os.Stderr, "a newer leader has written: step down")
	}
}
