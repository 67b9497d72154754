// Package faults names the kinds of fault the harness injects.
//
// It is a leaf: names and the parsing of a list of names, nothing that acts. Code that
// only needs to speak of faults (the variants, flags, the validate plan) imports it and
// nothing of the harness; package nemesis implements the faults themselves.
package faults
