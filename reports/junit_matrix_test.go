package reports

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An experiment's junit.xml has one case per run, each named by row and seed, with the
// run's time, and counts failures, errors and skipped runs as its cases say; it is valid
// against the schema.
func TestMatrixJUnit(t *testing.T) {
	cases := []MatrixCase{
		{Name: "no-fence (seed 1)", Class: "fenceline.validate.no-fence", Time: 31 * time.Second, Out: "invalid: caught"},
		{Name: "reference-under-no-fence (seed 1)", Class: "fenceline.validate.reference-under-no-fence", Time: 30 * time.Second,
			Failure: "false alarm: the reference was judged invalid"},
		{Name: "no-fence (seed 2)", Class: "fenceline.validate.no-fence", Error: "run incomplete: heal all: …"},
		{Name: "no-fence (seed 3)", Class: "fenceline.validate.no-fence", Skipped: "not run: interrupted"},
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := MatrixJUnit(f, "fenceline validate (seeds 1..3)", 95*time.Second, [][2]string{{"seeds", "1..3"}}, cases); err != nil {
		t.Fatal(err)
	}
	f.Close()
	validateJUnit(t, path)
	b, _ := os.ReadFile(path)
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Errors != 1 || s.Skipped != 1 || s.Time != "95.000" || s.Cases[0].Time != "31.000" {
		t.Errorf("suite %+v", s)
	}
	names := map[string]bool{}
	for _, c := range s.Cases {
		if names[c.Classname+"/"+c.Name] {
			t.Errorf("case %s/%s twice", c.Classname, c.Name)
		}
		names[c.Classname+"/"+c.Name] = true
	}
}
