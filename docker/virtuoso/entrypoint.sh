#!/usr/bin/env bash
# Start Virtuoso in the foreground with its database in /database (a volume).
#
# The ini is Debian's stock one with the settings below applied at every start, then any
# variable VIRT_<Section>_<Key>=<value> (the convention of OpenLink's own image, so the
# same compose environment works with both), e.g. VIRT_Parameters_NumberOfBuffers=170000.
# On the first start (no database yet) the DBA password becomes $DBA_PASSWORD.
set -euo pipefail

DB=/database
INI="$DB/virtuoso.ini"
cp /usr/share/virtuoso-opensource-7/virtuoso.ini "$INI"
ini() { inifile +inifile "$INI" +section "$1" +key "$2" +value "$3"; }

for key in DatabaseFile ErrorLogFile LockFile TransactionFile xa_persistent_file; do
    stock="$(inifile +inifile "$INI" +section Database +key "$key")"
    ini Database "$key" "$DB/$(basename "$stock")"
done
for key in DatabaseFile TransactionFile; do
    stock="$(inifile +inifile "$INI" +section TempDatabase +key "$key")"
    ini TempDatabase "$key" "$DB/$(basename "$stock")"
done
# ASK answers {"boolean": ...} only with CaseMode 2 (otherwise a one-row __ASK_RETVAL table).
ini Parameters CaseMode 2
# The bulk loader reads Turtle only from listed directories: /data is the KB volume.
ini Parameters DirsAllowed ".,/data"
# About 160 MB of buffers: plenty for scale-1 KBs; raise both for large ones (Virtuoso's
# guide: 170000/130000 per 2 GB of memory to spare).
ini Parameters NumberOfBuffers 20000
ini Parameters MaxDirtyBuffers 15000
# Both ports on every interface *of the container*: compose publishes them (or not) on the host.
ini Parameters ServerPort 1111
ini HTTPServer ServerPort 8890
# The stock 10000 truncates larger answers silently (only a response header tells).
ini SPARQL ResultSetMaxRows 1000000
ini SPARQL MaxQueryExecutionTime 60
# 0 turns off refusal by cost estimate: the estimator rejected compiled KoPL queries that
# run in milliseconds ("estimated execution time 882 (sec) exceeds the limit of 400").
ini SPARQL MaxQueryCostEstimationTime 0

# VIRT_<Section>_<Key>: section names have no underscore, keys may.
while IFS='=' read -r name value; do
    rest="${name#VIRT_}"
    ini "${rest%%_*}" "${rest#*_}" "$value"
done < <(env | grep -E '^VIRT_[A-Za-z]+_[A-Za-z0-9_]+=' || true)

PASSWORD="${DBA_PASSWORD:-dba}"
if ! [[ "$PASSWORD" =~ ^[A-Za-z0-9_]+$ ]]; then
    # It goes into SQL (SET PASSWORD) and onto isql's command line unquoted.
    echo "virtuoso-entrypoint: DBA_PASSWORD may hold only letters, digits and _" >&2
    exit 2
fi
if [ ! -f "$DB/virtuoso.db" ] && [ "$PASSWORD" != dba ]; then
    # A private first run to change the password before any client can connect with the
    # stock one: SQL on the container's loopback only, and no HTTP server at all. (Not HTTP
    # on loopback: a new database records the address its HTTP server first listens on
    # for /sparql, which would then answer 404 on every other address.)
    echo "virtuoso-entrypoint: new database; setting the DBA password"
    cp "$INI" "$DB/bootstrap.ini"
    inifile +inifile "$DB/bootstrap.ini" +section Parameters +key ServerPort +value 127.0.0.1:1111
    sed -i '/^\[HTTPServer\]/,/^\[/ s/^ServerPort/;ServerPort/' "$DB/bootstrap.ini"
    virtuoso-t +foreground +configfile "$DB/bootstrap.ini" > "$DB/bootstrap.log" 2>&1 &
    boot=$!
    for _ in $(seq 1 240); do
        if isql-vt 127.0.0.1:1111 dba dba 'EXEC=SELECT 1;' > /dev/null 2>&1; then break; fi
        if ! kill -0 "$boot" 2> /dev/null; then cat "$DB/bootstrap.log"; exit 1; fi
        sleep 0.25
    done
    isql-vt 127.0.0.1:1111 dba dba "EXEC=SET PASSWORD dba $PASSWORD;" > "$DB/bootstrap-isql.log" 2>&1
    if grep -q '\*\*\* Error' "$DB/bootstrap-isql.log"; then cat "$DB/bootstrap-isql.log"; exit 1; fi
    isql-vt 127.0.0.1:1111 dba "$PASSWORD" 'EXEC=checkpoint; shutdown;' > /dev/null 2>&1 || true
    wait "$boot" || true
    rm -f "$DB/bootstrap.ini" "$DB/bootstrap.log" "$DB/bootstrap-isql.log"
fi

# Virtuoso shuts down on SIGTERM; pass docker stop's signal on and wait for it.
virtuoso-t +foreground +configfile "$INI" &
server=$!
trap 'kill -TERM "$server" 2> /dev/null || true' TERM INT
status=0
wait "$server" || status=$?
if kill -0 "$server" 2> /dev/null; then wait "$server" || status=$?; fi
exit "$status"
