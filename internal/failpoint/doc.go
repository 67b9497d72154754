// Package failpoint names the points in fenceline's code where the chaos harness can
// inject a sleep, a block, an error or a crash, and parses what to inject (an Action).
//
// Every point is listed in points.go, with why it is there. The hooks that reach them
// exist only in a build with the tag "failpoints" (the chaos binary is built with
// -tags chaos,failpoints): election and variants call the hooks from files behind that
// tag, and a default build of the library or of `fenceline node` has no hook, no call,
// no branch and no name of a point — TestDefaultBuildHasNoFailpoints (cmd/fenceline)
// reads the binary's symbol table and strings to keep it so.
//
// In a build with the tag, Arm sets an action on a point and Hit (called by the hooks)
// runs it. The registry is process-wide on purpose: a failpoint stands for something
// that happens to the process (a pause, a crash), and the hooks sit in library code that
// has no handle on the node that runs it. A node arms points only through its control
// endpoint in chaos mode (PUT /failpoint/NAME) or its --failpoint flag.
package failpoint
