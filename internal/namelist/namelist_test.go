package namelist

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func lookup(n string) (string, error) {
	if n == "bad" {
		return "", errors.New("unknown name bad")
	}
	return "<" + n + ">", nil
}

func TestPick(t *testing.T) {
	all := []string{"a", "b", "c"}
	for _, tc := range []struct {
		list    string
		want    []string
		wantErr string
	}{
		{"all", []string{"<a>", "<b>", "<c>"}, ""},
		{" all ", []string{"<a>", "<b>", "<c>"}, ""},
		{"b, a,b,,", []string{"<b>", "<a>"}, ""},
		{"a,bad", nil, "unknown name bad"},
		{" , ", nil, "--things: none given"},
		{"", nil, "--things: none given"},
	} {
		got, err := Pick("things", tc.list, all, lookup)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Pick(%q): err %v, want %q", tc.list, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Pick(%q) = %v, %v; want %v", tc.list, got, err, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	errUnknown := errors.New("unknown thing")
	items := []string{"a", "b"}
	id := func(s string) string { return s }
	if got, err := Find(items, id, "b", errUnknown); got != "b" || err != nil {
		t.Fatalf("Find b: %q, %v", got, err)
	}
	_, err := Find(items, id, "c", errUnknown)
	if !errors.Is(err, errUnknown) || !strings.Contains(err.Error(), "(known: a, b)") {
		t.Fatalf("Find c: %v", err)
	}
}
