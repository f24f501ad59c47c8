#!/usr/bin/env bash
# Load the SynKQA-Pro KB into the compose file's Virtuoso and Fuseki (kb-loader service).
#
# Every step is `synkqa kb load` (store/loaders.py), the code CI runs natively; the
# endpoint tests run this very script against a private Virtuoso and an Oxigraph server
# standing in for Fuseki (both speak the Graph Store protocol), with the variables below.
#
# The Turtle is written under $SYNKQA_HOME, a volume Virtuoso also mounts at the same
# path: its bulk loader reads the file itself (the directory is in DirsAllowed).
set -euo pipefail

SEED="${SYNKQA_SEED:-42}"
SCALE="${SYNKQA_SCALE:-1}"
GRAPH="${SYNKQA_GRAPH:-http://synkqa.org/kb}"
WAIT="${SYNKQA_WAIT:-300}"
VIRTUOSO_URL="${VIRTUOSO_URL:-http://virtuoso:8890/sparql}"
VIRTUOSO_ISQL="${VIRTUOSO_ISQL:-virtuoso:1111}"
FUSEKI_URL="${FUSEKI_URL:-http://fuseki:3030/synkqa/sparql}"
FUSEKI_STORE_URL="${FUSEKI_STORE_URL:-http://fuseki:3030/synkqa/data}"
SYNKQA="${SYNKQA:-synkqa}"

if [ "${SKIP_VIRTUOSO:-0}" != 1 ]; then
    $SYNKQA kb load --kind virtuoso --endpoint "$VIRTUOSO_URL" --isql "$VIRTUOSO_ISQL" \
        --graph "$GRAPH" --seed "$SEED" --scale "$SCALE" --wait "$WAIT" \
        --password "${VIRTUOSO_DBA_PASSWORD:-dba}"
fi
if [ "${SKIP_FUSEKI:-0}" != 1 ]; then
    # Fuseki's default graph: queries need no default-graph-uri.
    $SYNKQA kb load --kind graph-store --endpoint "$FUSEKI_URL" --store-url "$FUSEKI_STORE_URL" \
        --seed "$SEED" --scale "$SCALE" --wait "$WAIT" \
        --user admin --password "${FUSEKI_ADMIN_PASSWORD:-admin}"
fi
