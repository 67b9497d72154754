package main

import (
	"fmt"
	"strings"

	"github.com/fenceline/fenceline/variants"
)

func checkVariant(v string) error {
	_, err := variants.ByName(v)
	return err
}

// variantArg is the --variant to pass to nodes: none for the reference.
func variantArg(v string) string {
	if v == variants.Reference {
		return ""
	}
	return v
}

// variantHelp lists the variants for -h.
func variantHelp() string {
	var b strings.Builder
	b.WriteString("the design to run: reference, or one broken ON PURPOSE for self-validation (needs --chaos):")
	for _, v := range variants.All()[1:] {
		fmt.Fprintf(&b, "\n    %s: %s", v.Name, v.Description)
	}
	return b.String()
}
