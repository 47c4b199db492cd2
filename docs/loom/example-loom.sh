#!/bin/sh
# A complete loom for loom-gateway over fixed data (docs/loom.md): it
# answers the eight commands in the argv the gateway builds, prints one
# JSON value on stdout, labels its rows with ifc, and exits as loom does.
# Everything but the answer goes to stderr, which the gateway never reads.
set -u
# The gateway sets exactly PATH and the transport's variables.
if [ -z "${LOOM_INSTANCE_DIR:-}${LOOM_PAGE_RPC_QUEUE:-}" ]; then
  echo "loom: no transport configured" >&2; exit 2
fi
W='{"confidentiality":["https://loom.example/facet/work"]}'
H='{"confidentiality":["https://loom.example/facet/health"]}'
out() { printf '%s\n' "$1"; }
case "${1:-} ${2:-}" in
"search "*)
  out '{"schemaVersion":1,"hits":['\
'{"id":"note:1","title":"Atlas launch checklist","ifc":'"$W"'},'\
'{"id":"note:2","title":"Clinic appointment","ifc":'"$H"'},'\
'{"id":"note:3","title":"Office hours moved"}],"truncated":false}' ;;
"page discover")
  out '{"totalPages":2,"pages":[{"path":"Projects/Atlas","ifc":'"$W"'},{"path":"Projects/Clinic","ifc":'"$H"'}]}' ;;
"page inspect"|"page read")
  case "${3:-}" in
  Projects/Atlas) out '{"path":"Projects/Atlas","title":"Atlas","text":"Launch in March.","ifc":'"$W"'}' ;;
  Projects/Clinic) out '{"path":"Projects/Clinic","title":"Clinic","text":"Check-up on Friday.","ifc":'"$H"'}' ;;
  *) out '{"ok":false,"code":"page_not_found"}'; exit 1 ;;
  esac ;;
"people "*)
  case "${2:-}" in
  person:ada|ada@example.com) out '{"id":"person:ada","name":"Ada Example","ifc":'"$W"'}' ;;
  team@example.com) echo "loom: 2 people match that lookup" >&2; exit 3 ;;
  *) echo "loom: no person matches that lookup" >&2; exit 1 ;;
  esac ;;
"calendar list")
  out '[{"id":"evt-1","title":"Atlas launch","start":"2026-03-05T10:00:00Z","ifc":'"$W"'},'\
'{"id":"evt-2","title":"Check-up","start":"2026-03-06T09:00:00Z","ifc":'"$H"'}]' ;;
"context where"|"context activity")
  out '{"read":"'"$2"'","place":"Example Labs, 4th floor","ifc":'"$W"'}' ;;
"profile "*)
  if [ "${3:-}" = "--fresh" ]; then
    out '{"hasProfile":false,"tier":"fallback","name":"Loom user"}'; exit 1
  fi
  out '{"hasProfile":true,"id":"person:ada","name":"Ada Example","ifc":'"$W"'}' ;;
*) echo "loom: usage: loom <search|page|people|calendar|context|profile> ... --json" >&2; exit 2 ;;
esac
