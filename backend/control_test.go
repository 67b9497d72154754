package backend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A hook the node lacks (404, 405, 501) is ErrNoHook; any other refusal is the node's
// reason, cut to one short line even when the node answers with a whole HTML page.
func TestControlAnswers(t *testing.T) {
	page := "<!DOCTYPE HTML>\n<html>\n<body>\n" + strings.Repeat("<p>Error code explanation</p>\n", 40) + "</body></html>"
	for _, tc := range []struct {
		code   int
		noHook bool
	}{{http.StatusNotFound, true}, {http.StatusMethodNotAllowed, true}, {http.StatusNotImplemented, true}, {http.StatusBadRequest, false}, {http.StatusInternalServerError, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, page, tc.code)
		}))
		addr := strings.TrimPrefix(srv.URL, "http://")
		for name, err := range map[string]error{
			"failpoints": DeleteFailpoints(context.Background(), addr),
			"clock":      PostClock(context.Background(), addr, time.Second, 1),
		} {
			if err == nil {
				t.Fatalf("%d %s: no error", tc.code, name)
			}
			if errors.Is(err, ErrNoHook) != tc.noHook {
				t.Errorf("%d %s: %v, ErrNoHook %v", tc.code, name, err, tc.noHook)
			}
			if len(err.Error()) > 240 || strings.Contains(err.Error(), "\n") {
				t.Errorf("%d %s: the error is not one short line: %q", tc.code, name, err)
			}
		}
		srv.Close()
	}
}

// A PUT or DELETE to a node's control endpoint that meets a kept-alive connection the
// node closed, before any answer, is sent again on a new one: both are idempotent. The
// server here answers the first request on a connection and closes it at the second.
func TestControlRetriesIdempotentOnClosedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				_, _ = http.ReadRequest(br) // the second request: closed unanswered
			}()
		}
	}()
	addr := ln.Addr().String()
	ctx := context.Background()
	for i := range 3 {
		if err := DeleteFailpoints(ctx, addr); err != nil {
			t.Fatalf("DELETE %d: %v", i, err)
		}
		if err := PutFailpoint(ctx, addr, "x", "block"); err != nil {
			t.Fatalf("PUT %d: %v", i, err)
		}
	}
}
