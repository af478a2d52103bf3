# Artifact Registry container image: one static binary on an empty base.
#
#   docker build --build-arg VERSION="$(git describe --always --dirty)" -t artifact-registry .
#   docker run -p 8080:8080 -e DATABASE_URL=postgres://... \
#     -e ARTIFACT_REGISTRY_STORAGE_URL=s3://bucket?region=... artifact-registry
#
# The image has no PostgreSQL server binaries, so the embedded database
# of `make run` is not available: DATABASE_URL is required. It has no
# shell either, so there is no HEALTHCHECK; orchestrators probe
# GET /-/health (the process serves) and GET /-/ready (database reachable
# and migrations current), as deploy/kubernetes does. The web UI is
# embedded in the binary (web/dist).

# The Go version of go.mod.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `artifact-registry version` prints (the Makefile passes
# git describe; the build context has no .git).
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
# Static (no cgo), reproducible paths, the Makefile's ldflags.
# deploy/docker_test.go runs this exact command and checks the result.
# build-command-begin
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/artifact-registry ./cmd/artifact-registry
# build-command-end
# Directories the empty base lacks: /tmp for the spool files of
# pull-through cache fills (os.TempDir) and /data for the data directory,
# both writable by the runtime user. A read-only root file system mounts
# volumes over them (deploy/kubernetes).
RUN mkdir -p /out/rootfs/tmp /out/rootfs/data && chmod 1777 /out/rootfs/tmp && chown 65532:65532 /out/rootfs/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/rootfs/ /
COPY --from=build /out/artifact-registry /artifact-registry
# A numeric non-root user: no /etc/passwd is needed, and Kubernetes can
# verify runAsNonRoot.
USER 65532:65532
WORKDIR /data
ENV ARTIFACT_REGISTRY_LISTEN=0.0.0.0:8080 \
    ARTIFACT_REGISTRY_DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["/artifact-registry"]
CMD ["serve"]
