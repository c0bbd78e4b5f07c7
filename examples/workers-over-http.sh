#!/usr/bin/env bash
# A tour of the worker endpoints over plain HTTP, against a running prodops-server.
#
#   cargo run --release -p prodops-server -- serve      # prints the two export lines on first start
#   export PRODOPS_BASE_URL=... PRODOPS_API_KEY=...     # paste them
#   bash examples/workers-over-http.sh
#
# Needs curl and python3 (to read JSON). Every call fails loudly on an HTTP error.
set -euo pipefail
: "${PRODOPS_BASE_URL:?set PRODOPS_BASE_URL (prodops-server serve prints it on first start)}"
: "${PRODOPS_API_KEY:?set PRODOPS_API_KEY (prodops-server serve prints it on first start)}"
api="$PRODOPS_BASE_URL/api/v2"

call() { # METHOD PATH [JSON]
  local args=(--silent --show-error --fail-with-body -X "$1" -H "X-API-Key: $PRODOPS_API_KEY" "$api$2")
  [[ $# -ge 3 ]] && args+=(-H "Content-Type: application/json" -d "$3")
  curl "${args[@]}"
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

echo "== create two workers in one all-or-nothing batch"
ids=$(call PUT /worker/bulk '[{"name":"Ada Lovelace","customerIdentifier":"E-100"},{"name":"Grace Hopper","customerIdentifier":"E-101"}]')
ada=$(echo "$ids" | field '["ids"][0]')
echo "$ids"

echo "== find them: search is a case-insensitive substring over name and customerIdentifier"
call GET "/worker?search=e-10&sort=name&pageSize=10" | field '["totalCount"]'

echo "== archive Ada: her name and identifier get the archive suffix"
call PATCH "/worker/$ada" '{"isArchived": true}' | field '["name"]'

echo "== archived workers are hidden unless asked for"
call GET "/worker/count?isArchived=true"; echo

echo "== restore her"
call PATCH "/worker/$ada" '{"isArchived": false}' | field '["name"]'

echo "== a retried POST with the same Idempotency-Key creates one worker"
key="example-$(date +%s)"
for _ in 1 2; do
  curl --silent --fail-with-body -X POST -H "X-API-Key: $PRODOPS_API_KEY" -H "Idempotency-Key: $key" \
    -H "Content-Type: application/json" -d '{"name":"Katherine Johnson"}' "$api/worker" | field '["id"]'
done

echo "== group and count by status"
call POST /worker/group-and-count '{"groupByField":"status"}'; echo
