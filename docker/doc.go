// Package docker builds the images of the docker backend (package backend/container) and
// connects to the Docker engine. Four images, built locally by BuildImages (`make images`,
// `go run ./docker/cmd/images`) and never pulled — the machine has no registry:
//
//   - fenceline:dev — the static fenceline binary FROM scratch (nodes and the source);
//   - fenceline-toxiproxy:dev — the toxiproxy server of go.mod's version FROM scratch;
//   - fenceline-redis:dev — Debian's redis-server and its libraries FROM scratch, with an
//     append-only file unless the command turns it off;
//   - fenceline-postgres:dev (BuildOptions.Postgres, `make images STORE=postgres`) —
//     Debian's PostgreSQL 15 server and its libraries FROM scratch, run as an
//     unprivileged user, with a database cluster made by initdb on the host when the image
//     is built (initdb needs /bin/sh); needed only for a store in PostgreSQL.
//
// Their Dockerfiles are in docker/images; the build contexts are assembled in docker/build
// (git-ignored) and built with the classic builder. Each image carries the hash of its
// build context in the label fenceline.inputs, and an image whose hash is unchanged is
// not built again.
//
// RemoveRuns removes the containers and networks of runs that a killed runner left
// behind (`make docker-prune`); Connect is the one way to the engine (DOCKER_HOST, or the
// default socket), and fails with ErrNoEngine when none answers.
package docker
