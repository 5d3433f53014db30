#!/bin/sh
# Prometheus's entry point in docker-compose.yml: the admin token for scraping the API's /metrics, from ADMIN_TOKEN
# or else from the secrets the API generated into the state volume (mounted read-only at /state), then Prometheus.
set -eu
token="${ADMIN_TOKEN:-}"
if [ -z "$token" ] && [ -f /state/secrets.json ]; then
  token=$(sed -n 's/.*"adminToken": *"\([^"]*\)".*/\1/p' /state/secrets.json)
fi
printf '%s' "$token" > /tmp/admin_token
exec /bin/prometheus --config.file=/etc/prometheus/prometheus.yml --storage.tsdb.path=/prometheus
