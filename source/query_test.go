package source

import (
	"errors"
	"net/url"
	"strconv"
	"testing"
)

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		raw          string
		cursor       int64
		limit        int
		invalidField string
	}{
		{"", 0, DefaultLimit, ""},
		{"cursor=&limit=", 0, DefaultLimit, ""},
		{"cursor=42&limit=7", 42, 7, ""},
		{"cursor=9223372036854775807&limit=1000&order=asc", 9223372036854775807, 1000, ""},
		{"cursor=-1", 0, 0, "cursor"},
		{"cursor=abc", 0, 0, "cursor"},
		{"cursor=1.5", 0, 0, "cursor"},
		{"cursor=9223372036854775808", 0, 0, "cursor"},
		{"limit=0", 0, 0, "limit"},
		{"limit=1001", 0, 0, "limit"},
		{"limit=-3", 0, 0, "limit"},
		{"limit=ten", 0, 0, "limit"},
		{"order=desc", 0, 0, "order"},
	} {
		q, err := url.ParseQuery(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		c, l, err := parseQuery(q)
		if tc.invalidField != "" {
			var qe *queryError
			if !errors.As(err, &qe) || qe.field != tc.invalidField {
				t.Errorf("parseQuery(%q) error = %v, want invalid %s", tc.raw, err, tc.invalidField)
			}
			continue
		}
		if err != nil || c != tc.cursor || l != tc.limit {
			t.Errorf("parseQuery(%q) = %d, %d, %v; want %d, %d", tc.raw, c, l, err, tc.cursor, tc.limit)
		}
	}
}

// FuzzParseQuery: the parser never panics, accepts only values in range, names the field
// it rejects, and what it accepts round-trips.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "cursor=5&limit=10", "cursor=-1", "limit=1001", "order=desc",
		"cursor=%zz", "cursor=1&cursor=2", "limit=+5", "cursor=0x10", "limit=1000&order=asc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // net/http answers such a request with the values it could parse; so do we
		}
		c, l, err := parseQuery(q)
		if err != nil {
			var qe *queryError
			if !errors.As(err, &qe) || qe.field == "" || qe.reason == "" {
				t.Fatalf("parseQuery(%q): error %v does not name a field", raw, err)
			}
			return
		}
		if c < 0 || l < 1 || l > MaxLimit {
			t.Fatalf("parseQuery(%q) = %d, %d: out of range", raw, c, l)
		}
		q2 := url.Values{"cursor": {strconv.FormatInt(c, 10)}, "limit": {strconv.Itoa(l)}}
		c2, l2, err := parseQuery(q2)
		if err != nil || c2 != c || l2 != l {
			t.Fatalf("round trip of %q: %d, %d, %v; want %d, %d", raw, c2, l2, err, c, l)
		}
	})
}
