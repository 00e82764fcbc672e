# Lemonade Server's single executable on Debian slim, built from this checkout:
#   docker build -t lemonade-server .
#   docker run -p 13305:13305 -v lemonade:/var/lib/lemonade lemonade-server
# The cache (config.json, engines, models) is the volume; set LEMONADE_API_KEY (docker run -e)
# whenever the port is reachable from other machines.

# The build: npm's packages (Bun among them) and `bun run build`, which writes dist/lemonade.
FROM node:20-bookworm-slim AS build
WORKDIR /src
# onnxruntime-node's install script would fetch CUDA libraries; the executable carries no onnxruntime.
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx bun run build

# The image: the executable alone, as its own user, on the Debian release the .deb targets.
FROM debian:bookworm-slim
# ca-certificates: model and engine downloads over HTTPS; libgomp1: llama.cpp's prebuilt CPU engine;
# openssl: `lemonade worker` makes its TLS certificate with it on first start.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libgomp1 openssl \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --create-home --home-dir /var/lib/lemonade --shell /usr/sbin/nologin lemonade
COPY --from=build /src/dist/lemonade /usr/bin/lemonade
USER lemonade
WORKDIR /var/lib/lemonade
# Bound to every interface, since the port is published from the container's network.
ENV HOME=/var/lib/lemonade \
    LEMONADE_CACHE_DIR=/var/lib/lemonade/.cache/lemonade \
    LEMONADE_HOST=0.0.0.0 \
    LEMONADE_PORT=13305
VOLUME ["/var/lib/lemonade"]
EXPOSE 13305
HEALTHCHECK --interval=30s --timeout=5s CMD ["/usr/bin/lemonade", "status"]
ENTRYPOINT ["/usr/bin/lemonade"]
CMD ["serve"]
