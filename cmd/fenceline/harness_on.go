//go:build chaos

package main

// chaosOnly marks the harness's commands in the usage; a chaos build has them all.
const chaosOnly = ""
