# GeoArena app image: the arena server, the rating job and the CLI.
FROM python:3.11-slim-bookworm

# bubblewrap: GATE's code sandbox; libseccomp2: its system-call filter; tini: an init that
# reaps orphans (the server would otherwise be pid 1); libgl/libglib: onnxruntime/OpenCV for the OCR baseline
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libseccomp2 tini libgl1 libglib2.0-0 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY arena ./arena
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
ARG EXTRAS=heic
RUN pip install --no-cache-dir ".[${EXTRAS}]" && useradd --create-home arena && mkdir -p /data && chown arena /data

USER arena
ENV ARENA_DATA_DIR=/data ARENA_ENV=production
EXPOSE 8000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["arena", "serve", "--host", "0.0.0.0", "--port", "8000"]
