#!/usr/bin/env bash
# Cross-check the toolkit's native interpreter against the KB on a SPARQL endpoint: N random
# well-typed programs (docker/programs.py), each run on both with
# `synkqa execute --cross-check`, which fails on any disagreement or endpoint error.
#
# Meant to run inside the toolkit's container of docker/compose.yml (docker/test.sh does):
#   docker-compose -f docker/compose.yml exec synkqa bash /src/docker/crosscheck.sh [N]
# Exit 0 only when all N programs ran and every answer agreed.
set -euo pipefail

N="${1:-${SYNKQA_CHECK_PROGRAMS:-1000}}"
SEED="${SYNKQA_SEED:-42}"
SCALE="${SYNKQA_SCALE:-1}"
PROGRAM_SEED="${SYNKQA_PROGRAM_SEED:-0}"
ENDPOINT="${SYNKQA_ENDPOINT:-http://virtuoso:8890/sparql}"
GRAPH="${SYNKQA_GRAPH:-http://synkqa.org/kb}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 "$HERE/programs.py" --n "$N" --seed "$PROGRAM_SEED" --kb-seed "$SEED" --kb-scale "$SCALE" \
    > "$WORK/programs.txt"

backend="$ENDPOINT"
if [ -n "$GRAPH" ]; then backend="$ENDPOINT?default-graph-uri=$GRAPH"; fi
start=$(date +%s.%N)
status=0
synkqa execute --input "$WORK/programs.txt" --backend "$backend" --cross-check --json \
    --seed "$SEED" --scale "$SCALE" > "$WORK/results.jsonl" 2> "$WORK/stderr.txt" || status=$?
seconds=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")

# One summary line (docker/test.sh reads it), then the first failures in full.
result=0
python3 - "$WORK/results.jsonl" "$N" "$status" "$seconds" "$backend" <<'EOF' || result=$?
import json, sys
path, wanted, status, seconds, backend = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = [json.loads(line) for line in open(path) if line.strip()]
agree = sum(1 for r in rows if r["error"] is None)
disagree = [r for r in rows if r["error"] and r["error"].startswith("engines disagree")]
other = [r for r in rows if r["error"] and not r["error"].startswith("engines disagree")]
print(f"cross-check: {len(rows)} programs, {agree} agree, {len(disagree)} disagree, "
      f"{len(other)} other errors; native vs {backend}; {seconds} s; exit {status}")
for r in (disagree + other)[:5]:
    print(f"  {r['program']}\n    {r['error']}".replace("\n", "\n    "))
sys.exit(0 if status == 0 and len(rows) == wanted and agree == wanted else 1)
EOF
if [ "$result" != 0 ] && [ -s "$WORK/stderr.txt" ]; then tail -5 "$WORK/stderr.txt" >&2; fi
exit "$result"
