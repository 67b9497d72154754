package judge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fenceline/fenceline/history"
)

// TestMemoryLimit: the limit follows the size of what a check reads, compressed files
// counted at their expanded size, with a floor for small runs.
func TestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	if got := memoryLimit(dir); got != 256<<20 {
		t.Errorf("empty run: %d, want the 256 MiB floor", got)
	}
	if err := os.Mkdir(filepath.Join(dir, history.HistoryDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int64{ // sparse files: no disk is used
		filepath.Join(history.HistoryDir, "n1.jsonl"):    1 << 30,
		filepath.Join(history.HistoryDir, "n2.jsonl.gz"): 10 << 20,
		history.AuditFile + history.GzipSuffix:           20 << 20,
		history.StoreFile:                                1 << 20,
		"index.html":                                     1 << 30, // not read by a check
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	in := int64(1<<30 + 10*(10<<20) + 10*(20<<20) + 1<<20)
	if got, want := memoryLimit(dir), in+in*15/100; got != want {
		t.Errorf("limit %d, want %d (1.15 × %d)", got, want, in)
	}
}
