# fenceline-postgres:dev — Debian's PostgreSQL 15 server FROM scratch, for --store
# postgres on the docker backend. rootfs/ holds the postgres binary at the path it was
# built for (it finds its share directory from there), every library `ldd` lists,
# /usr/share/postgresql/15 (postgres.bki, timezone sets...), the UTC zone file and an
# /etc/passwd with the unprivileged user postgres (uid 70): PostgreSQL refuses root.
#
# pgdata/data is a cluster made by initdb on the host when the image is built (initdb runs
# its backend through /bin/sh, which a scratch image has not): trust authentication from
# any address, the settings of the harness in postgresql.conf. It lives in the
# container's writable layer (no VOLUME): `docker kill` and a start of the same container
# keep it, and PostgreSQL replays its write-ahead log.
FROM scratch
COPY rootfs/ /
COPY --chown=70:70 pgdata/ /var/lib/postgresql/
USER 70:70
ENTRYPOINT ["/usr/lib/postgresql/15/bin/postgres", "-D", "/var/lib/postgresql/data"]
