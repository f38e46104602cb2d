# syntax=docker/dockerfile:1
#
# Parley in a container: a static binary (no cgo) on distroless/static, run
# as a non-root user, its SQLite data in a volume.
#
#   docker build -t parley --build-arg PARLEY_VERSION=$(git describe --tags --always --dirty) .
#   docker run -d --name parley -p 3000:3000 -v parley-data:/data \
#     -e PARLEY_PUBLIC_URL=http://localhost:3000 parley
#   docker logs parley 2>&1 | grep admin   # the admin token, printed once
#   docker cp parley:/data/admin-token - | tar -xO   # or read from the volume
#
# Set PARLEY_ADMIN_TOKEN (at least 16 characters) to choose the admin token,
# PARLEY_DATABASE_URL for PostgreSQL. Health: GET /healthz and /readyz.
# scripts/docker-build-check builds and smoke-tests this image.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The version `parley version` prints; .git is not sent to the build, so
# it cannot come from the build information.
ARG PARLEY_VERSION=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${PARLEY_VERSION}" -o /out/parley ./cmd/parley \
 && mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/parley /usr/local/bin/parley
# The data directory, owned by the image's non-root user (nonroot, 65532).
COPY --from=build --chown=65532:65532 /out/data /data
ENV PARLEY_ADDR=0.0.0.0:3000 \
    PARLEY_DATA_DIR=/data \
    PARLEY_LOG_FORMAT=json
USER 65532:65532
VOLUME ["/data"]
EXPOSE 3000
# Exec form: parley is PID 1 and gets docker stop's SIGTERM (graceful stop).
ENTRYPOINT ["/usr/local/bin/parley"]
CMD ["serve"]
