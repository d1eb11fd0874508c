# Vigil's image: the static binary (CGO_ENABLED=0) and CA certificates, nothing else.
# `make image` builds the binary into bin/ and copies the host's CA bundle into build/ first.
FROM scratch
COPY build/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65534:65534 build/data/ /data/
COPY bin/vigil /vigil
USER 65534:65534
ENTRYPOINT ["/vigil"]
CMD ["help"]
