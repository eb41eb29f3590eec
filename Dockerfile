# syntax=docker/dockerfile:1
# ebzipd in a container: built in the CUDA devel image with the same steps
# as README's (`make build`, which runs scripts/install_deps.sh), run in the
# CUDA runtime image with only the shared libraries the binaries load.
#
#   docker build -t ghcr.io/ebzip/ebzipd:0.1.0 .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 ghcr.io/ebzip/ebzipd:0.1.0
#
# Without a GPU the same image serves with the CPU backend (--backend auto).

ARG CUDA_VERSION=13.0.0
ARG UBUNTU_VERSION=24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION} AS build
# sm_90 is the H100; add architectures (e.g. "80;90") for other GPUs.
ARG CUDA_ARCHITECTURES=90
ARG DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
# EBZIP_DEPS=build installs the build packages only (no test data, no tools).
# RelWithDebInfo is the configuration the tests run (symbols are stripped
# below); warnings do not fail the build here, as Ubuntu's g++ is not the
# compiler CI checks them with.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && EBZIP_DEPS=build make build BUILD=/src/build TARGETS="ebzipd ebzip" \
      CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEBZIP_WERROR=OFF -DEBZIP_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} -DBUILD_TESTING=OFF -DEBZIP_BENCH=OFF" \
 && rm -rf /var/lib/apt/lists/*
# The command's modules (client/cli/modules.h) go to lib/ebzip/ beside bin/.
RUN mkdir -p /out/bin /out/lib/ebzip \
 && cp build/server/ebzipd build/client/cli/ebzip /out/bin/ \
 && cp build/client/cli/ebzip-remote.so build/client/cli/ebzip-array-file.so /out/lib/ebzip/ \
 && strip /out/bin/* /out/lib/ebzip/* \
 && scripts/runtime_packages.sh /out/bin/ebzipd /out/bin/ebzip /out/lib/ebzip/*.so \
      > /out/runtime-packages.txt

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION} AS runtime
ARG CUDA_VERSION
ARG UBUNTU_VERSION
ARG DEBIAN_FRONTEND=noninteractive
# Set by the release build: --build-arg VERSION=... --build-arg REVISION=$(git rev-parse HEAD)
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="ebzipd" \
      org.opencontainers.image.description="Error-bounded compression of scientific float arrays, on GPUs, as a gRPC service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.documentation="docs/operations.md in the ebzip source tree" \
      org.opencontainers.image.base.name="nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION}"
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin ebzip
COPY --from=build /out/bin/ebzipd /out/bin/ebzip /usr/local/bin/
COPY --from=build /out/lib/ebzip/ /usr/local/lib/ebzip/
USER 10001:10001
# gRPC (ebzip.v1.Compressor, grpc.health.v1.Health, reflection) and metrics.
EXPOSE 50051 9464
ENV EBZIPD_LISTEN=0.0.0.0:50051 \
    EBZIPD_METRICS_LISTEN=0.0.0.0:9464
# The health service stays open when a token is required. With TLS on, give
# the CA: --tls /path/ca.pem (and --tls_server_name if the name differs).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/ebzip", "health", "--server", "127.0.0.1:50051", "--timeout", "4", "--quiet"]
# SIGTERM drains (health NOT_SERVING, in-flight calls finish), then exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/ebzipd"]
