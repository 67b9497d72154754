# fenceline-etcd:dev — Debian's etcd (package etcd-server, 3.4) FROM scratch, for the
# targets that elect through etcd on the docker backend. rootfs/ holds /usr/bin/etcd and
# every library `ldd` lists, at the same paths.
#
# Each member's data directory (/data/<name>) is in the container's writable layer (no
# VOLUME): `docker kill` and a start of the same container keep its log, and it rejoins
# its cluster as a restarted server does. The backend gives every flag.
FROM scratch
COPY rootfs/ /
ENTRYPOINT ["/usr/bin/etcd"]
