package harness_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testfiles"
)

// compressibleFiles are the files CompressRun compresses in the run writeRunDir makes.
var compressibleFiles = []string{
	history.FaultsFile, history.AuditFile,
	filepath.Join(history.HistoryDir, "n1.jsonl"), filepath.Join(history.HistoryDir, "n2.jsonl"),
	filepath.Join("redis", "appendonlydir", "appendonly.aof.1.incr.aof"),
}

// keptFiles are the files it leaves as they are.
var keptFiles = []string{history.RunInfoFile, history.StoreFile, "results.json", filepath.Join(history.LogsDir, "n1.log"),
	filepath.Join("redis", "appendonlydir", "appendonly.aof.manifest"), filepath.Join("redis", "redis.log")}

// writeRunDir makes a run directory with every kind of file, each with distinct
// content, and returns the contents by relative name.
func writeRunDir(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	want := map[string][]byte{}
	for i, name := range append(append([]string{}, compressibleFiles...), keptFiles...) {
		var b bytes.Buffer
		for j := range 2000 {
			fmt.Fprintf(&b, `{"file":%q,"i":%d,"j":%d,"type":"invoke"}`+"\n", name, i, j)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = b.Bytes()
	}
	return dir, want
}

// checkCompressed asserts that dir holds exactly the compressed form of every
// compressible file, with the original content, and the other files untouched.
func checkCompressed(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	for _, name := range compressibleFiles {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists (err %v)", name, err)
		}
		if got := testfiles.GunzipFile(t, p+harness.CompressedSuffix); !bytes.Equal(got, want[name]) {
			t.Errorf("%s.gz holds %d bytes, not the %d of the original", name, len(got), len(want[name]))
		}
	}
	for _, name := range keptFiles {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want[name]) {
			t.Errorf("%s was changed (err %v)", name, err)
		}
	}
	testfiles.NoTemporaries(t, dir)
}

func TestCompressRunRoundTrip(t *testing.T) {
	dir, want := writeRunDir(t)
	before := dirSize(t, dir)
	if err := harness.CompressRun(dir); err != nil {
		t.Fatal(err)
	}
	checkCompressed(t, dir, want)
	var compressed int64
	for _, name := range compressibleFiles {
		compressed += int64(len(want[name]))
	}
	if after := dirSize(t, dir); before-after < compressed*3/4 {
		t.Errorf("the run went from %d to %d bytes, though %d bytes were compressible", before, after, compressed)
	}
}

func TestCompressRunIsIdempotent(t *testing.T) {
	dir, want := writeRunDir(t)
	if err := harness.CompressRun(dir); err != nil {
		t.Fatal(err)
	}
	first := map[string][]byte{}
	for _, name := range compressibleFiles {
		b, err := os.ReadFile(filepath.Join(dir, name+harness.CompressedSuffix))
		if err != nil {
			t.Fatal(err)
		}
		first[name] = b
	}
	if err := harness.CompressRun(dir); err != nil {
		t.Fatalf("second run: %v", err)
	}
	checkCompressed(t, dir, want)
	for _, name := range compressibleFiles {
		b, _ := os.ReadFile(filepath.Join(dir, name+harness.CompressedSuffix))
		if !bytes.Equal(b, first[name]) {
			t.Errorf("%s.gz was rewritten", name)
		}
	}
}

// TestCompressRunAfterAnInterruption starts from the states an interrupted CompressRun
// can leave and checks that the next one finishes the job with the originals' content.
func TestCompressRunAfterAnInterruption(t *testing.T) {
	dir, want := writeRunDir(t)
	h1 := filepath.Join(dir, history.HistoryDir, "n1.jsonl")
	h2 := filepath.Join(dir, history.HistoryDir, "n2.jsonl")
	faults := filepath.Join(dir, history.FaultsFile)
	audit := filepath.Join(dir, history.AuditFile)
	// n1: the temporary file was half written (not even valid gzip).
	if err := os.WriteFile(h1+harness.CompressedSuffix+".tmp", []byte("\x1f\x8b half"), 0o644); err != nil {
		t.Fatal(err)
	}
	// n2: renamed but the original not yet removed; the .gz is stale (an older,
	// shorter version): the original is the truth.
	if err := os.WriteFile(h2+harness.CompressedSuffix, testfiles.Gzip(t, want[filepath.Join(history.HistoryDir, "n2.jsonl")][:100]), 0o644); err != nil {
		t.Fatal(err)
	}
	// faults.jsonl: already compressed, a stray temporary left next to it.
	if err := os.WriteFile(faults+harness.CompressedSuffix, testfiles.Gzip(t, want[history.FaultsFile]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(faults); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(faults+harness.CompressedSuffix+".tmp", []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	// audit.jsonl: a garbage .gz next to the original.
	if err := os.WriteFile(audit+harness.CompressedSuffix, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := harness.CompressRun(dir); err != nil {
		t.Fatal(err)
	}
	checkCompressed(t, dir, want)
}

func TestCompressRunBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if err := harness.CompressRun(missing); err == nil {
		t.Error("no error for a missing directory")
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := harness.CompressRun(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file as the run directory: %v", err)
	}
	// A run that recorded nothing yet is fine.
	if err := harness.CompressRun(t.TempDir()); err != nil {
		t.Errorf("empty run directory: %v", err)
	}
	// A directory where a history file should be is reported, not followed.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, history.AuditFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := harness.CompressRun(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory named %s: %v", history.AuditFile, err)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			st, serr := d.Info()
			if serr != nil {
				return serr
			}
			n += st.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
