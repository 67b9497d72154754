// Package namelist parses the comma-separated lists of names that the matrix commands take
// (--variants, --targets): "all" or names, each looked up, duplicates dropped, order kept.
// Find is the lookup of one name among named items.
package namelist

import (
	"fmt"
	"strings"
)

// Pick parses list for the flag called flagName. "all" stands for every name in all;
// lookup turns a name into its item or says why it cannot. An empty list is an error.
func Pick[T any](flagName, list string, all []string, lookup func(string) (T, error)) ([]T, error) {
	if strings.TrimSpace(list) == "all" {
		list = strings.Join(all, ",")
	}
	var out []T
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		item, err := lookup(n)
		if err != nil {
			return nil, err
		}
		seen[n] = true
		out = append(out, item)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: none given", flagName)
	}
	return out, nil
}

// Find returns the item of items whose name (nameOf) is name. For a name that none has,
// it returns unknown wrapped, with the name and the names known.
func Find[T any](items []T, nameOf func(T) string, name string, unknown error) (T, error) {
	names := make([]string, len(items))
	for i, it := range items {
		if nameOf(it) == name {
			return it, nil
		}
		names[i] = nameOf(it)
	}
	var zero T
	return zero, fmt.Errorf("%w %q (known: %s)", unknown, name, strings.Join(names, ", "))
}
