// Package container is the chaos harness's docker backend (`--backend docker`): the same
// programs as the process backend (package proc) run as containers on a private Docker
// network, driven through testcontainers-go and the Docker API, from the images that
// package docker builds. Backend implements backend.Backend, so every fault of package
// nemesis and every workload runs on it unchanged.
//
// # What a run is
//
// Start creates, for one run: a bridge network; Redis (alias redis), toxiproxy (alias
// toxiproxy), the event source (alias source) and nodes n1..nN. Node i reaches Redis and
// the source only through its own two proxies, which listen in the toxiproxy container on
// ports 10000+i and 11000+i and are created through the toxiproxy API, so that one node
// can be cut off alone. The runner reaches Redis, the toxiproxy API and each node's
// control endpoint through ports published on 127.0.0.1 only. Every container and the
// network carry the label fenceline.run=<run id>; Close removes all of them, also after a
// failed or interrupted start, and keeps the images. RemoveRuns removes what a runner
// killed with SIGKILL left behind (testcontainers-go's reaper, Ryuk, is off: its image
// would have to be pulled).
//
// With Spec.Node.Store "postgres", PostgreSQL runs too (alias postgres), and node i
// reaches it through a third proxy, on port 12000+i. With the sentinel topology, Redis is
// data nodes r1..r3 and Sentinels s1..s3 instead of one server, every link a fault may cut
// through toxiproxy (see sentinel.go): a peer proxy per data node, which replicas and
// Sentinels use and which it announces, and per node a proxy to every data node and
// Sentinel, mapped with --redis-addr-map. Their config files and append-only files are
// in the run directory's redis/<name>, mounted at /conf. With the cluster topology, Redis
// is data nodes r1..r6 and a relay container (alias bus-relay) whose address they
// announce, which forwards their client ports to their peer proxies and their cluster
// bus to them, cut per sender (see rediscluster.go).
//
// The run directory receives the same files as with the local backend:
// history/<node>.jsonl is written by the node itself through a bind mount (the node runs
// as the invoking user's uid:gid, so the files are that user's), and logs/<name>.log is
// each container's output, followed live from the engine, for the nodes, redis,
// toxiproxy and source.
//
// # Faults
//
//   - KillNode is SIGKILL (`docker kill`); StartNode starts the same container again, so
//     its writable layer and its history file carry over.
//   - StopNode is SIGTERM, then SIGKILL after Config.StopGrace. A paused node is thawed
//     after the SIGTERM, so it can release its lease, as with SIGSTOP/SIGCONT.
//   - PauseNode is `docker pause`, the cgroup freezer: unlike SIGSTOP, the process cannot
//     observe it, and the kernel still accepts connections into its backlog, so the
//     runner's status requests to a paused node hang until their timeout.
//   - KillRedis is SIGKILL of the Redis container; StartRedis starts the same container,
//     which finds its append-only file in the writable layer, and waits until it answers
//     PING after loading it.
//   - KillPostgres is SIGQUIT (an immediate shutdown, as locally; SIGKILL after 10s);
//     StartPostgres starts the same container, which replays its write-ahead log.
//   - The sentinel topology's faults: KillPrimary is SIGKILL of the primary's container,
//     PauseReplicas `docker pause` of the replicas, CutPrimary toxics on its peer proxy;
//     promotions are watched and the topology's settling judged by backend.SentinelSet,
//     as on the local backend. The cluster topology's are those of backend.ClusterSet on
//     these containers, CutPrimary cutting the bus through the relay container's API.
//   - Partitions, delays and clock faults go through toxiproxy and the control endpoint
//     exactly as with the local backend.
//
// # What it does not guarantee
//
//   - Host ports change across a restart: RedisAddr and ControlAddr are re-read after each
//     start, and an address obtained before a restart is stale.
//   - Timestamps in histories are the host's clock as seen from each container: the
//     containers share the host kernel's clock, so they are comparable, as on the local
//     backend.
//   - The Docker engine itself is trusted: a restart of dockerd, or a full disk, is not a
//     fault this backend models, and either may fail a run.
//   - testcontainers-go reads its settings once per process: this package sets
//     TESTCONTAINERS_RYUK_DISABLED=true and silences its default logger before its first
//     use. A program that used testcontainers-go earlier, with Ryuk on, needs a registry.
//   - Which engine is used: DOCKER_HOST, or the default socket. If none answers, Start and
//     docker.BuildImages fail with docker.ErrNoEngine ("docker: no Docker engine answers at ...").
package container
