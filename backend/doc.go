// Package backend is what a chaos run runs on: the Backend interface that the process
// backend (package backend/proc: processes on 127.0.0.1) and the docker backend (package
// backend/container: containers) implement, and the logic both share. A backend starts
// Redis, a toxiproxy server, the event source and N `fenceline node` processes, each node
// reaching Redis and the source only through its own toxiproxy proxies, so that one node
// can be cut off alone.
//
// Redis runs as one server, or (Spec.Redis.Topology) as a primary with two replicas and
// three Sentinels (SentinelSet), or as a Redis Cluster of three primaries with one
// replica each (ClusterSet). In the replicated topologies every link a fault may cut goes
// through a proxy: the nodes' links to each data node, the replication links, and the
// Sentinels' links or the cluster bus (through relays of its own: see busRelay). Both
// backends embed ReplicaFaults, which forwards the Redis faults to the topology.
//
// The users of a Backend each define the small part they use (nemesis.Backend for the
// faults, harness.Backend for the runner, StatusReader here for Leader). Both backends
// share their defaults (Spec.WithDefaults, DefaultNodes), proxy naming (RedisProxyName,
// SourceProxyName), the ctx-aware toxiproxy API client (Links), readiness polling
// (WaitReady, ProbeHTTP), the node's control endpoint (GetStatus, PostClock, the
// failpoint requests) and the Redis ping (PingRedis). A Backend owns every process, proxy
// and port it starts, and Close removes all of them, also after a failed start.
package backend
