# fenceline-redis:dev — Debian's redis-server around its own shared libraries.
# rootfs/ holds /redis-server (a copy of the file behind the /usr/bin/redis-server
# symlink: Redis picks its mode from argv[0]), every library `ldd` lists at the same path
# and /lib64/ld-linux-x86-64.so.2.
#
# The data directory /data is in the container's writable layer (no VOLUME): `docker kill`
# and a start of the same container keep the append-only file. The default command turns
# the AOF on; a command override (--appendonly no) turns it off for the volatile fault.
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENTRYPOINT ["/redis-server"]
CMD ["--protected-mode", "no", "--save", "", "--appendonly", "yes", "--appendfsync", "always"]
