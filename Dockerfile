# The mock as a container: `docker build -t mockserver .` then
#   docker run -p 4010:4010 -e MOCKSERVER_CONTROL_TOKEN=change-me mockserver
# serves the Kindgi mock built in; your own API: mount a folder on /data and name its files, e.g.
#   docker run -p 4010:4010 -e MOCKSERVER_CONTROL_TOKEN=change-me -v "$PWD/api:/data:ro" mockserver \
#     --host 0.0.0.0 --port 4010 --spec /data/openapi.yaml --fixtures /data/fixtures
# docs/SCALING.md has more (Redis, replicas, Kubernetes). tests/deploy/test_container.py runs these steps in a
# fresh virtual environment, as far as a machine without a container engine can.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY mockserver ./mockserver
COPY spec ./spec
COPY fixtures ./fixtures
RUN pip install --no-cache-dir . \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin mock \
    && mkdir -p /data && chown mock /data

USER mock
VOLUME ["/data"]
EXPOSE 4010

# ready: /__mock/health answers 200 (503 while the shared state cannot be reached); the control token comes from
# the same MOCKSERVER_CONTROL_TOKEN the server reads
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["mockserver", "health", "--url", "http://127.0.0.1:4010"]

ENTRYPOINT ["mockserver", "serve"]
CMD ["--host", "0.0.0.0", "--port", "4010", "--spec", "spec/kindgi.yaml", "--fixtures", "fixtures"]
