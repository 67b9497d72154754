# fenceline:dev — the static fenceline binary (CGO_ENABLED=0), used for the nodes and the
# event source. Built by `make images` (go run ./docker/cmd/images), which puts the binary
# next to this file in docker/build/fenceline/. Nothing is pulled: no `syntax` line, no base.
FROM scratch
COPY fenceline /fenceline
ENTRYPOINT ["/fenceline"]
