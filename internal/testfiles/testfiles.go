// Package testfiles holds file helpers for the tests of the packages that write run
// files (history, checker, harness, reports): gzip and gunzip, and a check that no
// temporary file was left. It fails the test on any error. Only tests import it.
package testfiles

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// NoTemporaries fails the test for every file under dir whose name ends in ".tmp": a
// writer that writes to a temporary name and renames must leave none.
func NoTemporaries(tb testing.TB, dir string) {
	tb.Helper()
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if strings.HasSuffix(p, ".tmp") {
			tb.Errorf("left behind: %s", p)
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}
