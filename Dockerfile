# The processor image; the broker comes from apache/kafka (see docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY topics ./topics
COPY engine ./engine
COPY streams ./streams
COPY localbroker ./localbroker
COPY advisors ./advisors
COPY examples ./examples
RUN pip install --no-cache-dir .
USER nobody
ENTRYPOINT ["placement-stream"]
CMD ["run"]
