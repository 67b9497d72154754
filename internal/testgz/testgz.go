// Package testgz gzips and gunzips for tests that check compressed run files (history,
// checker, harness, reports). It fails the test on any error. Only tests import it.
package testgz

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Gzip returns b compressed.
func Gzip(tb testing.TB, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// Gunzip returns what the gzip stream b holds.
func Gunzip(tb testing.TB, b []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// GunzipFile returns what the gzip file at path holds.
func GunzipFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return Gunzip(tb, b)
}
