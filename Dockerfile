# syntax=docker/dockerfile:1
# agentchat: a static binary in a small image, running as a non-root user.
# Build: docker build -t agentchat .   (not built in CI: no container daemon there)

FROM golang:1.26-alpine AS build
WORKDIR /src
RUN apk add --no-cache ca-certificates tzdata
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same command .ci/run builds the binary with.
RUN CGO_ENABLED=0 go build -trimpath -o /out/agentchat ./cmd/agentchat
RUN mkdir -p /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=build /out/agentchat /usr/local/bin/agentchat
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV AGENTCHAT_ADDR=0.0.0.0:8080 \
    AGENTCHAT_DATA_DIR=/data \
    AGENTCHAT_LOG_FORMAT=json
VOLUME /data
EXPOSE 8080
# The image has no shell, curl or wget: the binary checks its own /healthz.
HEALTHCHECK --interval=10s --timeout=4s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/agentchat", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/agentchat"]
CMD ["serve"]
