package failpoint

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Action
	}{
		{"sleep(250ms)", Action{Kind: Sleep, Count: 1, Sleep: 250 * time.Millisecond}},
		{"3*sleep(2s)", Action{Kind: Sleep, Count: 3, Sleep: 2 * time.Second}},
		{"block", Action{Kind: Block, Count: 1}},
		{" 2*error ", Action{Kind: Error, Count: 2}},
		{"exit", Action{Kind: Exit, Count: 1, Code: 1}},
		{"exit(7)", Action{Kind: Exit, Count: 1, Code: 7}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		// String is read back as the same action.
		if again, err := Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", c.in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "nap", "sleep", "sleep()", "sleep(-1s)", "sleep(1s", "block(1s)",
		"error(x)", "exit(200)", "0*block", "-1*block", "x*block", "2000000*block"} {
		if a, err := Parse(bad); !errors.Is(err, ErrBadAction) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrBadAction", bad, a, err)
		}
	}
}

func TestCheckNames(t *testing.T) {
	for _, p := range Points() {
		if err := Check(p.Name); err != nil || p.Doc == "" {
			t.Errorf("point %q: %v (doc %q)", p.Name, err, p.Doc)
		}
	}
	if err := Check("election/nonsense"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Check(nonsense) = %v, want ErrUnknown", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"sleep(1s)", "3*block", "exit(2)", "error"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		if a.Count < 1 || (a.Kind == Sleep && a.Sleep <= 0) {
			t.Fatalf("Parse(%q) = %+v", s, a)
		}
		if again, err := Parse(a.String()); err != nil || again != a {
			t.Fatalf("Parse(%q) = %+v, but its String %q parses as %+v, %v", s, a, a.String(), again, err)
		}
	})
}
