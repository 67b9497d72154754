//go:build chaos

package main

// chaosBuild: this build has the harness's commands (and the node its chaos flags).
const chaosBuild = true
