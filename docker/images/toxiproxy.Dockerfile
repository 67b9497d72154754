# fenceline-toxiproxy:dev — the toxiproxy server built from
# github.com/Shopify/toxiproxy/v2/cmd/server (the version in go.mod), static.
# -host=0.0.0.0: the API must be reachable from outside the container.
FROM scratch
COPY toxiproxy-server /toxiproxy-server
ENTRYPOINT ["/toxiproxy-server", "-host=0.0.0.0"]
