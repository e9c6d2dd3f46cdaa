#!/bin/bash
# The compose Grafana's entrypoint: makes each customer's organisation of organisations.tsv through Grafana's HTTP API,
# on a Grafana of its own on the loopback without provisioning, then starts Grafana as the image does (/run.sh).
# Grafana provisions data sources and dashboards only into organisations that exist, and cannot provision
# organisations themselves (grafana/organisations.py); it numbers them in the order they are made, which the file
# follows: an organisation made with another number stops the start.
set -euo pipefail

ORGANISATIONS=${SANLENS_GRAFANA_ORGANISATIONS:-/etc/sanlens/organisations.tsv}
RUN=${SANLENS_GRAFANA_RUN:-/run.sh}  # the image's own start script
PORT=${SANLENS_GRAFANA_SETUP_PORT:-3999}
API="http://127.0.0.1:$PORT/api"
AUTH="${GF_SECURITY_ADMIN_USER:-admin}:${GF_SECURITY_ADMIN_PASSWORD:?set a password}"

no_provisioning=$(mktemp -d)
GF_PATHS_PROVISIONING="$no_provisioning" GF_SERVER_HTTP_ADDR=127.0.0.1 GF_SERVER_HTTP_PORT=$PORT GF_INSTALL_PLUGINS="" \
    "$RUN" >/dev/null 2>&1 &
setup=$!
trap 'kill "$setup" 2>/dev/null || true' EXIT  # on a failure too (exec, at the end, leaves it behind)
for _ in $(seq 120); do
    curl -sf "$API/health" >/dev/null && break
    sleep 1
done
curl -sf "$API/health" >/dev/null || { echo "start.sh: Grafana did not answer on 127.0.0.1:$PORT within 120 s" >&2; exit 1; }

while IFS=$'\t' read -r org_id name; do
    [[ -z "$org_id" || "$org_id" == \#* ]] && continue
    status=$(curl -s -o /dev/null -w '%{http_code}' -u "$AUTH" "$API/orgs/$org_id")
    if [[ "$status" == 404 ]]; then
        made=$(curl -sf -u "$AUTH" -H 'Content-Type: application/json' -d "{\"name\":\"$name\"}" "$API/orgs")
        [[ "$made" == *"\"orgId\":$org_id"[,}]* ]] || {
            echo "start.sh: organisation '$name' was made as $made, not orgId $org_id" >&2; exit 1; }
        echo "start.sh: made organisation $org_id '$name'"
    else
        curl -sf -u "$AUTH" "$API/orgs/$org_id" | grep -qF "\"name\":\"$name\"" || {
            echo "start.sh: organisation $org_id is not '$name' (grafana/organisations.tsv)" >&2; exit 1; }
    fi
done < "$ORGANISATIONS"

kill "$setup"
wait "$setup" || true
trap - EXIT
rmdir "$no_provisioning"
exec "$RUN" "$@"
