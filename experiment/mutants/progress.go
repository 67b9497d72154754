//go:build chaos

package mutants

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// progressFile, in Out, receives each mutant's record as it is decided, so that a run
// cut short (a machine lost, a session's end: the whole takes hours) goes on with
// --resume instead of starting again.
const progressFile = "progress.jsonl"

// progressLine is one line of progressFile: a record and the code it was measured on.
type progressLine struct {
	// Code is codeDigest of the module the mutants were made from.
	Code string `json:"code"`
	Record
}

// progress appends records to progressFile.
type progress struct {
	f    *os.File
	code string
}

// openProgress opens the progress file at path for appending. With resume, it first
// reads the records already decided there, which must be of the same code (codeDigest);
// without, it starts the file afresh.
func openProgress(path, code string, resume bool) (*progress, map[string]Record, error) {
	done := map[string]Record{}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if resume {
		var err error
		if done, err = readProgress(path, code); err != nil {
			return nil, nil, err
		}
		flags = os.O_CREATE | os.O_RDWR | os.O_APPEND // endLine reads the last byte
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err == nil && resume {
		err = endLine(f)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mutants: %w", err)
	}
	return &progress{f: f, code: code}, done, nil
}

// endLine ends a last line cut short, so that the next record starts a line of its own.
func endLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte{'\n'})
	}
	return err
}

// readProgress returns the decided records of the progress file at path by mutant ID (a
// missing file has none). A record of other code is an error: its mutant ran against
// another module, and its outcome says nothing of this one.
func readProgress(path, code string) (map[string]Record, error) {
	done := map[string]Record{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mutants: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var l progressLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// A line cut short by the end of the run that wrote it: that mutant runs again.
			continue
		}
		if l.Code != code {
			return nil, fmt.Errorf("%s: line %d was measured on other code (%.12s, this is %.12s): the code changed since; run without --resume", path, n, l.Code, code)
		}
		if l.decided() {
			done[l.ID] = l.Record
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mutants: %s: %w", path, err)
	}
	return done, nil
}

// decided reports whether both stages answered (or the mutant does not compile): a
// mutant cut short, or undecided, runs again on resume.
func (r Record) decided() bool {
	if r.Harness == NotViable {
		return true
	}
	for _, v := range []string{r.Tests, r.Harness} {
		if v != Killed && v != Survived {
			return false
		}
	}
	return true
}

// add appends r.
func (p *progress) add(r Record) error {
	b, err := json.Marshal(progressLine{Code: p.code, Record: r})
	if err != nil {
		return err
	}
	if _, err := p.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("mutants: %s: %w", progressFile, err)
	}
	return nil
}

// codeDigest is a SHA-256 of the module at repo as copyTree copies it, but for what no
// run reads: Markdown and the survivors' arguments (equivalent.txt), which may be written
// between a run and its resumption.
func codeDigest(repo string) (string, error) {
	files, err := moduleFiles(repo)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		if strings.HasSuffix(f, ".md") || path.Base(f) == "equivalent.txt" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repo, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("mutants: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Close closes the file.
func (p *progress) Close() error { return p.f.Close() }
