// Package cluster runs a fenceline cluster for the chaos harness: Redis, a toxiproxy
// server, the event source and N `fenceline node` processes, each node reaching Redis and
// the source only through its own toxiproxy proxies, so that one node can be cut off alone.
//
// Redis runs as one server, or (Spec.Redis.Topology, local backend) as a primary with
// two replicas and three Sentinels, or as a Redis Cluster of three primaries with one
// replica each. In the replicated topologies every link a fault may cut goes through a
// proxy: the nodes' links to each data node, the replication links, and the Sentinels'
// links or the cluster bus (through relays of its own: see busRelay).
//
// Cluster is what a backend provides. Its users each define the small part they use
// (nemesis.Cluster for the faults, harness.Cluster for the runner, StatusReader here for
// Leader). The local backend (Local) runs everything as processes on 127.0.0.1; the
// docker backend (package docker) runs the same programs as containers. Both share their
// defaults (Spec.WithDefaults, DefaultNodes), proxy naming (RedisProxyName,
// SourceProxyName), the ctx-aware toxiproxy API client (Links), readiness polling
// (WaitReady, ProbeHTTP) and the Redis ping (PingRedis). A Cluster owns every process, proxy and
// port it starts and Close removes all of them, also after a failed start.
package backend
