#!/usr/bin/env bash
# The container test: build the images, run docker/compose.yml for real, cross-check the
# toolkit's native interpreter against Virtuoso in the stack, tear everything down.
#
#   bash docker/test.sh            # from any directory; needs root (or sudo) on a fresh machine
#   bash docker/test.sh --fresh    # first remove the images it builds (the fresh-machine path)
#
# Steps: install Debian's docker.io and docker-compose if missing; start dockerd if none
# is running (and stop it at the end, by PID, only then); find base images (present, or
# pulled, or else a local Debian made with debootstrap from the host's mirror and kept in
# the daemon for the next run); build both images; `up -d` with ports on 127.0.0.1 only
# (free ports picked here); check the published ports; cross-check N random programs
# (docker/crosscheck.sh in the toolkit container); show that the check fails on a graph
# holding another KB; `down -v`, also on failure or interrupt.
#
# Exit: 0 passed, 1 failed, 77 skipped (no Docker engine could be installed or started:
# the reason is printed as "skipping the container test: ...").
#
# Settings (environment): SYNKQA_CHECK_PROGRAMS (default 1000), SYNKQA_SEED / SYNKQA_SCALE
# (42 / 1), SYNKQA_BASE_IMAGE / VIRTUOSO_BASE_IMAGE (skip the base image search),
# SYNKQA_DOCKER_REPORT=FILE (also write the timings and image sizes as JSON).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SKIP=77
FRESH=0
for arg in "$@"; do
    case "$arg" in
        --fresh) FRESH=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "docker/test.sh: unknown argument $arg (see --help)" >&2; exit 2 ;;
    esac
done

PROJECT="synkqa-test"
N="${SYNKQA_CHECK_PROGRAMS:-1000}"
export SYNKQA_SEED="${SYNKQA_SEED:-42}" SYNKQA_SCALE="${SYNKQA_SCALE:-1}"
LOCAL_BASE="synkqa-local/debian:bookworm"
TOOLKIT_IMAGE="synkqa-pro:latest"
VIRTUOSO_IMAGE="synkqa-pro-virtuoso:7.2"
GRAPH="http://synkqa.org/kb"
CONTROL_GRAPH="http://synkqa.org/kb-control"

WORK="$(mktemp -d /tmp/synkqa-docker-test.XXXXXX)"
ROOTFS="$WORK/rootfs"
ROOTFS_MOUNTED=0
release_rootfs() {
    [ -d "$ROOTFS" ] || return 0
    # Whatever a failed debootstrap left mounted inside (proc, sys, bind-mounted devices),
    # deepest first; and never delete across a mount point.
    awk -v r="$ROOTFS/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r \
        | while read -r m; do as_root umount -l "$m" || true; done
    if [ "$ROOTFS_MOUNTED" = 1 ]; then as_root umount -l "$ROOTFS" || true; ROOTFS_MOUNTED=0; fi
    as_root rm -rf --one-file-system "$ROOTFS"
}
DOCKERD_PID=""
STACK=0
declare -A TIMES=()
declare -a ORDER=()
T_START=$(date +%s.%N)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[docker/test %6.1fs] %s\n' "$(since "$T_START")" "$*"; }
record() { TIMES[$1]="$2"; ORDER+=("$1"); log "$1: $2 s"; }
skip() { echo "skipping the container test: $*" >&2; exit "$SKIP"; }
fail() { echo "docker/test.sh: FAILED: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo > /dev/null; then sudo -n "$@"; else return 1; fi; }
compose() { "${COMPOSE[@]}" -f "$HERE/compose.yml" -p "$PROJECT" "$@"; }

summary() {
    local name
    echo "---- docker/test.sh timings (s) ----"
    for name in "${ORDER[@]}"; do printf '  %-58s %8s\n' "$name" "${TIMES[$name]}"; done
    printf '  %-58s %8s\n' "total" "$(since "$T_START")"
    if [ -n "${SIZES:-}" ]; then echo "---- images ----"; printf '%s\n' "$SIZES" | sed 's/^/  /'; fi
    if [ -n "${SYNKQA_DOCKER_REPORT:-}" ]; then
        {
            printf '{"total_seconds": %s, "programs": %s, "check": "%s", "seconds": {' \
                "$(since "$T_START")" "$N" "${CHECK_LINE:-}"
            local first=1
            for name in "${ORDER[@]}"; do
                [ $first = 1 ] || printf ', '
                first=0
                printf '"%s": %s' "$name" "${TIMES[$name]}"
            done
            printf '}, "images": {'
            first=1
            while read -r image size; do
                [ -n "$image" ] || continue
                [ $first = 1 ] || printf ', '
                first=0
                printf '"%s": "%s"' "$image" "$size"
            done <<< "${SIZES:-}"
            printf '}}\n'
        } > "$SYNKQA_DOCKER_REPORT"
    fi
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # A signal's trap runs where the shell was: maybe inside a redirected function call
    # (compose ... > log), so write to the script's own stdout and stderr again.
    exec 1>&3 2>&4
    if [ "$STACK" = 1 ]; then
        if [ "$status" != 0 ]; then
            echo "---- last container logs ----" >&2
            compose logs --no-color --tail=40 >&2 2>&1 || true
        fi
        local t
        t=$(now)
        compose down -v --remove-orphans --timeout 20 > "$WORK/down.log" 2>&1 \
            || { cat "$WORK/down.log" >&2; status=1; }
        record "teardown (down -v)" "$(since "$t")"
    fi
    if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2> /dev/null; then
        # Only the daemon this script started; its containerd child goes with it.
        kill -TERM "$DOCKERD_PID" 2> /dev/null || true
        for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2> /dev/null || break; sleep 0.5; done
        if kill -0 "$DOCKERD_PID" 2> /dev/null; then kill -KILL "$DOCKERD_PID" 2> /dev/null || true; fi
        log "stopped the dockerd this script started (pid $DOCKERD_PID)"
    fi
    release_rootfs 2> /dev/null || true
    rm -rf --one-file-system "$WORK" 2> /dev/null || as_root rm -rf --one-file-system "$WORK" 2> /dev/null || true
    if [ "$status" != "$SKIP" ]; then summary; fi
    case "$status" in
        0) log "PASSED" ;;
        "$SKIP") ;;
        130|143) log "INTERRUPTED (exit $status)" ;;
        *) log "FAILED (exit $status)" ;;
    esac
    exit "$status"
}
exec 3>&1 4>&2     # the script's own stdout and stderr, for cleanup
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 1. a Docker engine and compose ---------------------------------------------------------

t=$(now)
missing=()
command -v dockerd > /dev/null || missing+=(docker.io)
if ! command -v docker-compose > /dev/null && ! docker compose version > /dev/null 2>&1; then
    missing+=(docker-compose)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} from Debian"
    if ! as_root true 2> /dev/null; then skip "${missing[*]} not installed, and installing needs root or sudo"; fi
    if ! command -v apt-get > /dev/null; then skip "${missing[*]} not installed, and there is no apt-get"; fi
    if ! { as_root apt-get update -q && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q \
            --no-install-recommends "${missing[@]}"; } > "$WORK/apt.log" 2>&1; then
        tail -5 "$WORK/apt.log" >&2
        skip "apt-get could not install ${missing[*]}"
    fi
fi
if docker compose version > /dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
record "install docker.io/compose" "$(since "$t")"

t=$(now)
if ! docker info > /dev/null 2>&1; then
    if ! as_root true 2> /dev/null; then skip "no Docker daemon answers (docker info), and starting one needs root"; fi
    log "no Docker daemon running: starting dockerd"
    # No systemd on these machines: run it in the background and stop it by PID at the end.
    # Not through the as_root function: backgrounded, it would be a subshell, and $! its PID.
    if [ "$(id -u)" = 0 ]; then
        dockerd > "$WORK/dockerd.log" 2>&1 3>&- 4>&- &
    else
        sudo -n dockerd > "$WORK/dockerd.log" 2>&1 3>&- 4>&- &     # sudo passes our SIGTERM on
    fi
    DOCKERD_PID=$!
    for _ in $(seq 1 120); do
        docker info > /dev/null 2>&1 && break
        kill -0 "$DOCKERD_PID" 2> /dev/null || break
        sleep 0.5
    done
    if ! docker info > /dev/null 2>&1; then
        reason="$(grep -iE 'level=(error|fatal)|failed' "$WORK/dockerd.log" | tail -1 | cut -c1-300 || true)"
        skip "dockerd did not start${reason:+: $reason}"
    fi
fi
record "start dockerd" "$(since "$t")"

# ---- 2. what the builds use from the host: mirrors, proxy, trust store ----------------------

# The host's Debian mirror (deb822 or one-line sources), used for debootstrap and, when it
# is not deb.debian.org, passed to the builds.
apt_uris() {
    { sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2> /dev/null
      sed -n -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
          /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2> /dev/null; } | tr ' ' '\n' | sed '/^$/d'
}
MIRROR="$(apt_uris | grep -E '^https?://.*/debian/?$' | sed -n '1{s#/$##;p}' || true)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SECURITY="$(apt_uris | grep -E '^https?://.*/debian-security/?$' | sed -n '1{s#/$##;p}' || true)"
if [ "$MIRROR" != "http://deb.debian.org/debian" ]; then export SYNKQA_APT_MIRROR="$MIRROR"; fi
# pip's index settings, but not file:// indexes: a container cannot see the host's disk.
PIP_CONFIG="$(python3 -m pip config list 2> /dev/null || true)"
pip_setting() {   # ENV-NAME KEY: the environment's value, else the config files' (global/install)
    local from_env="$1" key="$2" value
    value="${!from_env:-}"
    if [ -z "$value" ]; then
        value="$(printf '%s\n' "$PIP_CONFIG" | sed -n -E "s/^(global|install)\.$key='(.*)'\$/\2/p" | head -1)"
    fi
    printf '%s\n' $value | grep -v '^file:' | paste -sd' ' - || true
}
export SYNKQA_PIP_INDEX_URL="${SYNKQA_PIP_INDEX_URL:-$(pip_setting PIP_INDEX_URL index-url)}"
export SYNKQA_PIP_EXTRA_INDEX_URL="${SYNKQA_PIP_EXTRA_INDEX_URL:-$(pip_setting PIP_EXTRA_INDEX_URL extra-index-url)}"
export SYNKQA_PIP_TRUSTED_HOST="${SYNKQA_PIP_TRUSTED_HOST:-$(pip_setting PIP_TRUSTED_HOST trusted-host)}"
BUILD_ARGS=()
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    if [ -n "${!v:-}" ]; then BUILD_ARGS+=(--build-arg "$v=${!v}"); fi
done
log "apt mirror $MIRROR${SYNKQA_APT_MIRROR:+ (passed to the builds)}; pip index ${SYNKQA_PIP_INDEX_URL:-PyPI}"

# ---- 3. base images ---------------------------------------------------------------------------

have_image() { docker image inspect "$1" > /dev/null 2>&1; }

if [ "$FRESH" = 1 ]; then
    log "--fresh: removing $TOOLKIT_IMAGE, $VIRTUOSO_IMAGE and $LOCAL_BASE"
    compose down -v --remove-orphans > /dev/null 2>&1 || true
    docker image rm -f "$TOOLKIT_IMAGE" "$VIRTUOSO_IMAGE" "$LOCAL_BASE" > /dev/null 2>&1 || true
    docker image prune -f > /dev/null 2>&1 || true
fi

make_local_base() {
    local rootfs="$ROOTFS" conf
    if ! command -v debootstrap > /dev/null; then
        log "installing debootstrap"
        { as_root apt-get update -q && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q \
            --no-install-recommends debootstrap; } > "$WORK/apt-debootstrap.log" 2>&1 \
            || { tail -5 "$WORK/apt-debootstrap.log" >&2; fail "could not install debootstrap"; }
    fi
    # On a tmpfs when we may mount one: dpkg's many small writes and the deletions below
    # take half the time there (on this kind of machine, 43 s instead of 70 s unpacking).
    as_root mkdir -p "$rootfs"
    if as_root mount -t tmpfs -o size=2g,mode=755 synkqa-rootfs "$rootfs" 2> /dev/null; then
        ROOTFS_MOUNTED=1
    fi
    log "debootstrap --variant=minbase bookworm from $MIRROR$([ "$ROOTFS_MOUNTED" = 0 ] || echo ' (on a tmpfs)')"
    local t
    t=$(now)
    as_root debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap failed"; }
    record "debootstrap (minbase)" "$(since "$t")"
    t=$(now)
    {
        echo "deb $MIRROR bookworm main"
        echo "deb $MIRROR bookworm-updates main"
        if [ -n "$SECURITY" ]; then echo "deb $SECURITY bookworm-security main"; fi
    } | as_root tee "$rootfs/etc/apt/sources.list" > /dev/null
    # The host's apt settings that concern reaching its mirror (a proxy; a snapshot mirror's
    # expired Release dates), and its trust store, so that a TLS-inspecting proxy the host
    # trusts is trusted inside too. Only this machine-made base carries them.
    conf="$(apt-config dump 2> /dev/null | grep -E '^Acquire::(https?::Proxy|Check-Valid-Until|Check-Date) ' || true)"
    if [ -n "$conf" ]; then printf '%s\n' "$conf" | as_root tee "$rootfs/etc/apt/apt.conf.d/50host" > /dev/null; fi
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        # The bundle as is (for images that never install ca-certificates), and the host's
        # certificates that Debian does not ship as local ones, which update-ca-certificates
        # keeps when a build installs ca-certificates and regenerates the bundle.
        as_root mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/usr/local/share/ca-certificates"
        as_root cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
        as_root python3 - "$rootfs/usr/local/share/ca-certificates" <<'EOF'
import glob, re, sys
def certs(text):
    return re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", text, re.S)
def key(pem):
    return "".join(pem.split())
shipped = {key(c) for path in glob.glob("/usr/share/ca-certificates/**/*.crt", recursive=True)
           for c in certs(open(path, errors="replace").read())}
extra = [c for c in certs(open("/etc/ssl/certs/ca-certificates.crt", errors="replace").read())
         if key(c) not in shipped]
for i, pem in enumerate(extra):
    with open(f"{sys.argv[1]}/host-{i:02d}.crt", "w") as out:
        out.write(pem + "\n")
print(f"{len(extra)} host certificate(s) beyond Debian's")
EOF
    fi
    # Slim like Debian's own container images: no docs, manuals or translations, no package
    # cache or lists (every build runs apt-get update).
    printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
        | as_root tee "$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" > /dev/null
    printf '%s\n' 'Acquire::Languages "none";' 'APT::Install-Recommends "false";' \
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb || true"; };' \
        | as_root tee "$rootfs/etc/apt/apt.conf.d/docker-slim" > /dev/null
    as_root find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    as_root rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
    as_root find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    as_root tar -C "$rootfs" -c . | docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' \
        - "$LOCAL_BASE" > /dev/null
    release_rootfs
    record "slim + import local base image" "$(since "$t")"
}

t=$(now)
if [ -z "${SYNKQA_BASE_IMAGE:-}" ] || [ -z "${VIRTUOSO_BASE_IMAGE:-}" ]; then
    OFFICIAL_TOOLKIT="python:3.11-slim-bookworm"
    OFFICIAL_DEBIAN="debian:bookworm-slim"
    if have_image "$OFFICIAL_TOOLKIT" && have_image "$OFFICIAL_DEBIAN"; then
        log "using the official base images already in the daemon"
    elif timeout 120 docker pull -q "$OFFICIAL_DEBIAN" > "$WORK/pull.log" 2>&1 \
            && timeout 300 docker pull -q "$OFFICIAL_TOOLKIT" >> "$WORK/pull.log" 2>&1; then
        log "pulled the official base images"
    elif have_image "$LOCAL_BASE"; then
        log "no registry ($(tail -1 "$WORK/pull.log" | cut -c1-120)); reusing $LOCAL_BASE"
        OFFICIAL_TOOLKIT="$LOCAL_BASE" OFFICIAL_DEBIAN="$LOCAL_BASE"
    else
        log "no registry ($(tail -1 "$WORK/pull.log" | cut -c1-120)); making $LOCAL_BASE"
        make_local_base
        OFFICIAL_TOOLKIT="$LOCAL_BASE" OFFICIAL_DEBIAN="$LOCAL_BASE"
    fi
    export SYNKQA_BASE_IMAGE="${SYNKQA_BASE_IMAGE:-$OFFICIAL_TOOLKIT}"
    export VIRTUOSO_BASE_IMAGE="${VIRTUOSO_BASE_IMAGE:-$OFFICIAL_DEBIAN}"
fi
record "base images (all of it)" "$(since "$t")"
log "bases: toolkit $SYNKQA_BASE_IMAGE, virtuoso $VIRTUOSO_BASE_IMAGE"

# An engine that starts but cannot run a container (no cgroups, no overlay, no network
# namespace) is a machine that cannot run this test, not a failure of the project.
if ! docker run --rm "$VIRTUOSO_BASE_IMAGE" true > "$WORK/run.log" 2>&1; then
    skip "the Docker engine cannot run a container: $(tail -1 "$WORK/run.log" | cut -c1-300)"
fi

# ---- 4. build ---------------------------------------------------------------------------------

# docker-compose v1 builds with the legacy builder, which keeps a failed step's container
# unless told otherwise.
FORCE_RM=()
if [ "${COMPOSE[0]}" = docker-compose ]; then FORCE_RM=(--force-rm); fi
build() {
    local service="$1" what="$2" t
    t=$(now)
    if ! compose build "${FORCE_RM[@]}" "${BUILD_ARGS[@]}" "$service" > "$WORK/build-$service.log" 2>&1; then
        tail -40 "$WORK/build-$service.log" >&2
        fail "building $what"
    fi
    record "build $what" "$(since "$t")"
}
build virtuoso "$VIRTUOSO_IMAGE"
build synkqa "$TOOLKIT_IMAGE"

# ---- 5. the stack -------------------------------------------------------------------------------

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export SYNKQA_VIRTUOSO_PORT="$(free_port)"
export SYNKQA_SERVE_PORT="$(free_port)"
while [ "$SYNKQA_SERVE_PORT" = "$SYNKQA_VIRTUOSO_PORT" ]; do SYNKQA_SERVE_PORT="$(free_port)"; done
# A fresh database gets this password (the entrypoint's first-start path runs too).
export VIRTUOSO_DBA_PASSWORD="test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
unset SYNKQA_SERVE_QUESTIONS

compose down -v --remove-orphans > /dev/null 2>&1 || true   # leftovers of an interrupted run
STACK=1
t=$(now)
if ! compose up -d --no-build > "$WORK/up.log" 2>&1; then
    cat "$WORK/up.log" >&2
    fail "docker-compose up"
fi
record "up -d (virtuoso, KB build + load)" "$(since "$t")"
# (rich wraps its lines at 80 columns when not on a terminal: join them first)
loaded="$(compose logs --no-color kb-loader 2>&1 | sed 's/^[^|]*| //' | tr '\n' ' ' | tr -s ' ' \
    | grep -oE 'loaded [0-9]+ triples .* in [0-9.]+ s' | tail -1 || true)"
[ -n "$loaded" ] || fail "kb-loader reported no load"
log "kb-loader: $loaded"
TRIPLES="$(echo "$loaded" | awk '{print $2}')"
loader_seconds="$(docker inspect -f '{{.State.StartedAt}} {{.State.FinishedAt}}' "$(compose ps -q kb-loader)" \
    | python3 -c 'import sys
from datetime import datetime
def t(s):  # RFC 3339 with nanoseconds: keep microseconds for fromisoformat
    day, frac = s.rstrip("Z").split(".") if "." in s else (s.rstrip("Z"), "0")
    return datetime.fromisoformat(f"{day}.{frac[:6].ljust(6, chr(48))}")
a, b = sys.stdin.read().split()
print(f"{(t(b) - t(a)).total_seconds():.1f}")' || echo null)"
record "kb-loader run (waits for Virtuoso, builds the KB, loads)" "$loader_seconds"
record "KB bulk load into Virtuoso" "$(echo "$loaded" | awk '{print $(NF-1)}')"

http_get() {   # URL [POST-JSON]: body on stdout; fails on HTTP errors and after 10 s
    python3 - "$@" <<'EOF'
import sys, urllib.request
url = sys.argv[1]
data = sys.argv[2].encode() if len(sys.argv) > 2 else None
headers = {"Accept": "application/sparql-results+json, application/json"}
if data:
    headers["Content-Type"] = "application/json"
with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as r:
    sys.stdout.write(r.read().decode())
EOF
}
json_get() { python3 -c 'import json, sys; v = json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v[int(k)] if k.isdigit() else v[k]
print(v)' "$1"; }

t=$(now)
SERVE="http://127.0.0.1:$SYNKQA_SERVE_PORT"
for _ in $(seq 1 240); do
    if http_get "$SERVE/api/info" > "$WORK/info.json" 2> /dev/null; then break; fi
    sleep 0.5
done
[ -s "$WORK/info.json" ] || fail "synkqa serve did not answer on $SERVE/api/info"
record "synkqa serve ready" "$(since "$t")"

# ---- 6. through the published ports, from the host --------------------------------------------

t=$(now)
ports="$(docker ps --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}} {{.Ports}}')"
printf '%s\n' "$ports" | sed 's/^/  /'
if printf '%s\n' "$ports" | grep -oE '[0-9a-f.:]*:[0-9]+->' | grep -vq '^127\.0\.0\.1:'; then
    fail "a port is published beyond 127.0.0.1"
fi
COUNT_QUERY="SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
direct="$(http_get "http://127.0.0.1:$SYNKQA_VIRTUOSO_PORT/sparql?default-graph-uri=$(enc "$GRAPH")&query=$(enc "$COUNT_QUERY")" \
    | json_get results.bindings.0.n.value)" || fail "Virtuoso's published /sparql did not answer the count"
forwarded="$(http_get "$SERVE/sparql?query=$(enc "$COUNT_QUERY")" | json_get results.bindings.0.n.value)" \
    || fail "synkqa serve's /sparql did not answer the count"
log "triples: loaded $TRIPLES, Virtuoso's /sparql $direct, synkqa serve's /sparql (forwarded) $forwarded"
[ "$direct" = "$TRIPLES" ] && [ "$forwarded" = "$TRIPLES" ] || fail "triple counts differ"
[ "$(json_get endpoint < "$WORK/info.json")" != "None" ] || fail "synkqa serve has no endpoint"
program='Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()'
answer="$(http_get "$SERVE/api/execute" "{\"program\": \"$program\", \"backend\": \"endpoint\", \"cross_check\": true, \"trace\": false}")" \
    || fail "synkqa serve's /api/execute failed"
agree="$(printf '%s' "$answer" | json_get cross_check.agree)" || fail "no cross-check in serve's answer: $answer"
log "serve /api/execute on Virtuoso: $(printf '%s' "$answer" | json_get answer) (native agrees: $agree)"
[ "$agree" = True ] || fail "serve's endpoint answer and native disagree: $answer"
record "checks through published ports" "$(since "$t")"

# ---- 7. the cross-check -------------------------------------------------------------------------

t=$(now)
status=0
compose exec -T synkqa bash /src/docker/crosscheck.sh "$N" > "$WORK/check.log" 2>&1 || status=$?
cat "$WORK/check.log"
CHECK_LINE="$(grep '^cross-check:' "$WORK/check.log" | tail -1 || true)"
[ "$status" = 0 ] || fail "cross-check of $N programs (native vs Virtuoso in the container)"
record "cross-check ($N programs)" "$(since "$t")"

# The check can fail: the same programs on a graph holding another KB (seed + 1) must
# disagree. Without this, an exit code 0 above could also mean "nothing compared".
t=$(now)
compose exec -T synkqa synkqa kb load --kind virtuoso --endpoint http://virtuoso:8890/sparql \
    --isql virtuoso:1111 --graph "$CONTROL_GRAPH" --seed "$((SYNKQA_SEED + 1))" --scale "$SYNKQA_SCALE" \
    --password "$VIRTUOSO_DBA_PASSWORD" > "$WORK/control-load.log" 2>&1 \
    || { cat "$WORK/control-load.log" >&2; fail "loading the control graph"; }
status=0
compose exec -T -e SYNKQA_GRAPH="$CONTROL_GRAPH" synkqa bash /src/docker/crosscheck.sh 100 \
    > "$WORK/control.log" 2>&1 || status=$?
control="$(grep '^cross-check:' "$WORK/control.log" | tail -1 || true)"
log "control, another KB in Virtuoso: $control"
if [ "$status" = 0 ] || ! printf '%s' "$control" | grep -qE ', [1-9][0-9]* disagree'; then
    cat "$WORK/control.log" >&2
    fail "the cross-check passed against a different KB: it cannot tell engines apart"
fi
record "control check (must fail; 100 programs)" "$(since "$t")"

SIZES="$(docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
    | grep -E "^($TOOLKIT_IMAGE|$VIRTUOSO_IMAGE|$SYNKQA_BASE_IMAGE|$VIRTUOSO_BASE_IMAGE) " | sort -u || true)"
log "$CHECK_LINE"
