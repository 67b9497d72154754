package harness

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenceline/fenceline/history"
)

// CompressedSuffix is appended to a run file's name when CompressRun compresses it:
// history/<node>.jsonl becomes history/<node>.jsonl.gz.
const CompressedSuffix = ".gz"

// CompressRun gzips, in place, the bulky records of a finished run in dir: every
// history/<node>.jsonl, faults.jsonl and audit.jsonl become the same name plus ".gz"
// (history.LoadRun reads either), and so do the Redis append-only files the local
// backend leaves in redis/appendonlydir (gunzip them to start a redis-server on that
// directory again). Call it once the run is checked and its report written: it is for
// keeping a run, not for running one. It blocks until every file is compressed and
// synced, and returns the first error (a file it could not compress is left as it was).
//
// Each file is written to X.gz.tmp, synced, renamed to X.gz, and only then is X removed,
// so an interruption at any point loses nothing: when both X and X.gz exist, X is the
// truth (X.gz may be from an earlier, interrupted attempt) and is compressed again.
// Leftover .gz.tmp files are removed. A run compressed already is left untouched, so
// CompressRun is idempotent. Files that do not exist are skipped.
func CompressRun(dir string) error {
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("harness: compress: %s is not a directory", dir)
	}
	names, err := compressible(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := compressFile(name); err != nil {
			return err
		}
	}
	return nil
}

// compressedGlobs match, besides FaultsFile and AuditFile, the files CompressRun
// compresses: every node's history and Redis's append-only files (cluster.StartLocal
// runs Redis in <run>/redis with appendonly yes).
var compressedGlobs = []string{
	filepath.Join(history.HistoryDir, "*.jsonl"),
	filepath.Join("redis", "appendonlydir", "*.aof"),
}

// compressible lists the files of dir that CompressRun compresses, existing or not
// (a globbed file is listed if either form, or a temporary, exists).
func compressible(dir string) ([]string, error) {
	names := []string{filepath.Join(dir, history.FaultsFile), filepath.Join(dir, history.AuditFile)}
	seen := map[string]bool{}
	for _, glob := range compressedGlobs {
		for _, suffix := range []string{"", CompressedSuffix, CompressedSuffix + ".tmp"} {
			m, err := filepath.Glob(filepath.Join(dir, glob+suffix))
			if err != nil {
				return nil, fmt.Errorf("harness: compress: %w", err)
			}
			for _, f := range m {
				f = strings.TrimSuffix(strings.TrimSuffix(f, ".tmp"), CompressedSuffix)
				if !seen[f] {
					seen[f] = true
					names = append(names, f)
				}
			}
		}
	}
	slices.Sort(names[2:])
	return names, nil
}

// compressFile compresses name into name.gz and removes name; see CompressRun.
func compressFile(name string) error {
	gz, tmp := name+CompressedSuffix, name+CompressedSuffix+".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("harness: compress: %w", err)
	}
	src, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil // never written, or compressed already
	}
	if err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("harness: compress: %s is not a regular file", name)
	}
	if err := writeGzip(tmp, src, st.Mode().Perm()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("harness: compress %s: %w", name, err)
	}
	if err := os.Rename(tmp, gz); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("harness: compress: %w", err)
	}
	// The rename must be on disk before the original goes: otherwise a crash could
	// leave neither.
	if err := syncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	}
	if err := syncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("harness: compress: %w", err)
	}
	return nil
}

// writeGzip writes r gzipped to a new file at path and syncs it.
func writeGzip(path string, r io.Reader, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	_, err = io.Copy(zw, r)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
