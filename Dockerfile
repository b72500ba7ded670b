# The processor image; the broker comes from apache/kafka (see docker-compose.yml).
# It runs as an unprivileged user with a numeric id (so Kubernetes' runAsNonRoot can verify it) and takes
# credentials from files: PLACEMENT_KAFKA__SASL_PASSWORD_FILE, PLACEMENT_KAFKA__SSL_*_FILE and
# PLACEMENT_EXPLAIN_TOKEN_FILE point at mounted secrets (docs/security.md), never at values baked into the image.
# Health: probe GET /readyz on PLACEMENT_HTTP_PORT (docker-compose.yml does; a Kubernetes readinessProbe likewise).
# Every package the CLI imports is copied, so each command the README documents runs in the image.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY topics ./topics
COPY engine ./engine
COPY connection ./connection
COPY streams ./streams
COPY cli ./cli
COPY localbroker ./localbroker
COPY advisors ./advisors
COPY deployers ./deployers
COPY examples ./examples
RUN pip install --no-cache-dir . \
 && groupadd --system --gid 10001 placement \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin placement
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["placement-stream"]
CMD ["run"]
