# syntax=docker/dockerfile:1
# ebzipd in a container, on plain Debian 12 in both stages: built with
# README's steps (`make build`, which installs the build packages through
# scripts/install_deps.sh), run with only the shared libraries the binaries
# load. The GPU codec links the CUDA runtime statically, so the runtime
# stage needs no CUDA package: on a GPU host the NVIDIA container toolkit
# mounts the driver (libcuda) at run time. Without a GPU (or without the
# toolkit) the same image serves with the CPU backend (--backend auto).
#
#   docker build -t ebzipd:0.1.0 .                                  # GPU image
#   docker build --build-arg CUDA_IMAGE=scratch -t ebzipd:0.1.0-cpu .  # CPU only
#   docker run --gpus all -p 50051:50051 -p 9464:9464 ebzipd:0.1.0
#
# Build arguments:
#   BASE        the Debian 12 image both stages start from; a local one made
#               by scripts/container_base.sh where no registry is reachable
#               (--build-arg BASE=localhost/debian:bookworm).
#   CUDA_IMAGE  an image whose /usr/local/cuda holds the CUDA toolkit (nvcc and
#               the static CUDA runtime) the GPU codec compiles with; only the
#               build stage mounts it, nothing of it reaches the final image.
#               `scratch`: no toolkit, a CPU-only image. A local toolkit
#               directory can stand in for it instead:
#               --build-context cuda=/usr/local/cuda-13.0
#               (docs/operations.md, "Container").
#   CUDA_ARCHITECTURES  GPUs to compile for: 90 is the H100; "80;90" adds the A100.

ARG BASE=debian:bookworm-slim
ARG CUDA_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04

# The toolkit: mounted into the build step below, never copied.
FROM ${CUDA_IMAGE} AS cuda

FROM ${BASE} AS build
ARG CUDA_ARCHITECTURES=90
# Declared here so that the build step's cache key changes with the toolkit's
# source (podman does not hash the contents of a mounted stage).
ARG CUDA_IMAGE
ARG DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# The build packages first, in a layer of their own that source changes do
# not invalidate. EBZIP_DEPS=build: Debian's build packages only (no test
# data, no tools).
COPY scripts/install_deps.sh scripts/
RUN EBZIP_DEPS=build scripts/install_deps.sh \
 && rm -rf /var/lib/apt/lists/*
COPY . .
# nvcc is in the mounted toolkit: /usr/local/cuda of CUDA_IMAGE, or the root
# of a --build-context cuda=DIR. No nvcc (CUDA_IMAGE=scratch): a CPU build.
# RelWithDebInfo is the configuration the tests run (symbols are stripped
# below).
RUN --mount=type=bind,from=cuda,target=/opt/toolkit \
    nvcc=; \
    for d in /opt/toolkit/usr/local/cuda /opt/toolkit; do \
      if [ -x "$d/bin/nvcc" ]; then nvcc=$d/bin/nvcc; break; fi; \
    done; \
    if [ -n "$nvcc" ]; then \
      cuda="-DEBZIP_CUDA=ON -DCMAKE_CUDA_COMPILER=$nvcc -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}"; \
    else \
      cuda="-DEBZIP_CUDA=OFF"; \
    fi; \
    echo "ebzip image: CMake flags for CUDA: $cuda" \
 && EBZIP_DEPS=build make build BUILD=/src/build TARGETS="ebzipd ebzip" \
      CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo $cuda -DBUILD_TESTING=OFF -DEBZIP_BENCH=OFF"
# The command's modules (client/cli/modules.h) go to lib/ebzip/ beside bin/.
# runtime_packages.sh names the Debian packages that own every shared library
# the binaries load, and fails on one no package owns (a CUDA runtime linked
# dynamically would be one).
RUN mkdir -p /out/bin /out/lib/ebzip \
 && cp build/server/ebzipd build/client/cli/ebzip /out/bin/ \
 && cp build/client/cli/ebzip-remote.so build/client/cli/ebzip-array-file.so /out/lib/ebzip/ \
 && strip /out/bin/* /out/lib/ebzip/* \
 && scripts/runtime_packages.sh /out/bin/ebzipd /out/bin/ebzip /out/lib/ebzip/*.so \
      > /out/runtime-packages.txt

FROM ${BASE} AS runtime
ARG BASE
ARG DEBIAN_FRONTEND=noninteractive
# Set by the release build: --build-arg VERSION=... --build-arg REVISION=$(git rev-parse HEAD)
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="ebzipd" \
      org.opencontainers.image.description="Error-bounded compression of scientific float arrays, on GPUs, as a gRPC service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="docs/operations.md in the ebzip source tree" \
      org.opencontainers.image.base.name="${BASE}"
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin ebzip
COPY --from=build /out/bin/ebzipd /out/bin/ebzip /usr/local/bin/
COPY --from=build /out/lib/ebzip/ /usr/local/lib/ebzip/
COPY --from=build /src/LICENSE /usr/share/doc/ebzip/LICENSE
USER 10001:10001
# The NVIDIA container toolkit mounts the driver's compute library when asked
# for it (docker run --gpus, Kubernetes' device plugin): say which.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
# gRPC (ebzip.v1.Compressor, grpc.health.v1.Health, reflection) and metrics.
EXPOSE 50051 9464
ENV EBZIPD_LISTEN=0.0.0.0:50051 \
    EBZIPD_METRICS_LISTEN=0.0.0.0:9464
# The health service stays open when a token is required. The check asks the
# address EBZIPD_LISTEN names (on Linux, connecting to 0.0.0.0 or [::]
# reaches the local host), so that moving the port moves the check. With TLS
# on, give the CA: --tls /path/ca.pem (and --tls_server_name if the name differs).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/bin/sh", "-c", "exec /usr/local/bin/ebzip health --server \"$EBZIPD_LISTEN\" --timeout 4 --quiet"]
# SIGTERM drains (health NOT_SERVING, in-flight calls finish), then exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/ebzipd"]
