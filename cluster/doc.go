// Package cluster runs a fenceline cluster for the chaos harness: Redis, a toxiproxy
// server, the event source and N `fenceline node` processes, each node reaching Redis and
// the source only through its own toxiproxy proxies, so that one node can be cut off alone.
//
// Cluster is the interface that faults (package nemesis) and the runner act on. The local
// backend (Local) runs everything as processes on 127.0.0.1; the docker backend (package
// docker) runs the same programs as containers. A Cluster owns every process, proxy and
// port it starts and Close removes all of them, also after a failed start.
package cluster
