#!/usr/bin/env bash
# End-to-end test of deploy/docker-compose.yml (`make compose-test`; not part
# of `make test`): brings the stack up — PostgreSQL, MinIO, the bucket job,
# three agents and a compactor — waits for every /readyz, runs a Kafka client
# round trip from the host (deploy/compose/roundtrip: the three brokers
# listed, N records produced with acks=all, all consumed back in a consumer
# group, committed offsets adding up to N), registers a schema with `floe
# schema` through agent1's schema registry (the host's 8081) and reads it
# back through agent2's and agent3's /schema-registry mounts, checks that the
# compactor (:8084) ran its jobs against the stores, counts the objects in
# MinIO, restarts the three agents and reads every record and the schema
# back, and tears the stack down with `down -v`.
#
# Images: floe:dev must exist (`make image`; the make target builds it). The
# public images the file names (postgres:15, minio/minio, minio/mc) are used
# when present; otherwise, since no registry may be reachable, STANDINS=1
# (the default) builds local stand-ins tagged with those names
# (standin-images.sh). STANDINS=0 runs only with what is there (pulled).
#
# Variables: DOCKER (docker CLI, default docker), COMPOSE (compose command;
# default `docker compose`: the installed plugin, else one built by
# compose-plugin.sh; COMPOSE_PLUGIN=0 falls back to docker-compose instead),
# N (records, default 2000), KEEP=1 (leave the stack up), PROJECT (compose
# project name, default floe-compose-test).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FILE=$ROOT/deploy/docker-compose.yml
DOCKER=${DOCKER:-docker}
N=${N:-2000}
PROJECT=${PROJECT:-floe-compose-test}
export AWS_EC2_METADATA_DISABLED=true
export DOCKER

compose() { "${compose_cmd[@]}" -p "$PROJECT" -f "$FILE" "$@"; }
say() { echo "compose-test: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

up=0 ok=0 tmp=$(mktemp -d)
cleanup() {
	if [ "$up" = 1 ]; then
		if [ "$ok" != 1 ]; then
			say "FAILED; the stack's state and logs:"
			compose ps -a || true
			compose logs --no-color --tail=60 || true
		fi
		if [ "${KEEP:-}" = 1 ]; then
			say "KEEP=1: the stack stays up; ${DOCKER_CONFIG:+DOCKER_CONFIG=$DOCKER_CONFIG }${compose_cmd[*]} -p $PROJECT -f $FILE down -v"
		else
			t=$(now)
			compose down -v --remove-orphans >/dev/null 2>&1 || compose down -v
			say "down -v in $(since "$t")"
		fi
	fi
	[ "${KEEP:-}" = 1 ] && [ "$up" = 1 ] || rm -rf "$tmp"
}
trap cleanup EXIT

# Compose: COMPOSE if set; else the `docker compose` plugin; else Compose
# v2 built from its Go module (compose-plugin.sh, cached) and handed to the
# CLI through a DOCKER_CONFIG of this run's own; with COMPOSE_PLUGIN=0,
# docker-compose (v1) instead.
if [ -n "${COMPOSE:-}" ]; then
	read -r -a compose_cmd <<<"$COMPOSE"
elif "$DOCKER" compose version >/dev/null 2>&1; then
	compose_cmd=("$DOCKER" compose)
elif [ "${COMPOSE_PLUGIN:-1}" = 1 ]; then
	plugin=$("$ROOT/deploy/compose/compose-plugin.sh")
	conf=${DOCKER_CONFIG:-$HOME/.docker}
	mkdir -p "$tmp/docker/cli-plugins"
	[ ! -f "$conf/config.json" ] || cp "$conf/config.json" "$tmp/docker/"
	ln -s "$plugin" "$tmp/docker/cli-plugins/docker-compose"
	export DOCKER_CONFIG=$tmp/docker
	compose_cmd=("$DOCKER" compose)
elif command -v docker-compose >/dev/null; then
	compose_cmd=(docker-compose)
else
	say "neither '$DOCKER compose' nor docker-compose works"
	exit 1
fi

say "compose: ${compose_cmd[*]} ($("${compose_cmd[@]}" version 2>/dev/null | head -1))"
"$DOCKER" info >/dev/null 2>&1 || { say "no Docker engine answers ($DOCKER info fails)"; exit 1; }

# The file publishes fixed host ports: refuse to start over anything else.
busy=""
for p in 9000 9001 9092 9093 9094 8080 8081 8082 8083 8084; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy="$busy $p"; fi
done
[ -z "$busy" ] || { say "ports already in use on 127.0.0.1:$busy (stop what holds them)"; exit 1; }

t=$(now)
if [ "${STANDINS:-1}" = 1 ]; then
	"$ROOT/deploy/compose/standin-images.sh"
fi
missing=""
for img in $(compose config | awk '$1 == "image:" { print $2 }' | sort -u); do
	"$DOCKER" image inspect "$img" >/dev/null 2>&1 || missing="$missing $img"
done
[ -z "$missing" ] || { say "images missing:$missing (make image; standin-images.sh)"; exit 1; }
say "images ready in $(since "$t")"


t=$(now)
# up -d waits for postgres to be healthy and the bucket job to finish.
up=1
timeout 300 "${compose_cmd[@]}" -p "$PROJECT" -f "$FILE" up -d
say "up -d returned in $(since "$t")"

# Every agent and the compactor ready (/readyz 200: stores reached).
ready() { curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/readyz" 2>/dev/null; }
wait_ready() {
	local deadline=$((SECONDS + 120)) p
	for p in "$@"; do
		until ready "$p"; do
			if [ $SECONDS -ge $deadline ]; then
				say "127.0.0.1:$p/readyz not 200 after 120s: $(curl -sS --max-time 2 "http://127.0.0.1:$p/readyz" 2>&1)"
				exit 1
			fi
			sleep 1
		done
	done
}
wait_ready 8080 8082 8083 8084
say "all /readyz 200 (agents :8080 :8082 :8083, compactor :8084) $(since "$t") after up"
compose ps -a

# The bucket job must have finished with 0 (agents depend on it).
bucket_id=$(compose ps -a -q bucket)
code=$("$DOCKER" inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$bucket_id")
[ "$code" = "exited 0" ] || { say "bucket job: $code, want exited 0"; exit 1; }

(cd "$ROOT" && go build -o "$tmp/roundtrip" ./deploy/compose/roundtrip && go build -o "$tmp/floe" ./cmd/floe)
topic=compose-test-$(date +%s)
roundtrip() {
	"$tmp/roundtrip" -brokers localhost:9092,localhost:9093,localhost:9094 -want-brokers 3 \
		-topic "$topic" -n "$N" -timeout 2m "$@"
}
t=$(now)
roundtrip -group "$topic-1"
say "round trip in $(since "$t")"

if command -v kcat >/dev/null; then
	nb=$(kcat -b localhost:9092 -L -m 10 | awk '/ brokers:/ { print $1 }')
	say "kcat -L: $nb brokers"
	[ "$nb" = 3 ] || { say "kcat lists $nb brokers, want 3"; exit 1; }
	# librdkafka too, on a topic created on first use (FLOE_AUTO_CREATE_TOPICS).
	seq 1 100 | kcat -b localhost:9092 -P -t "$topic-kcat" -X acks=all
	got=$(kcat -b localhost:9093 -C -t "$topic-kcat" -o beginning -e -q | wc -l)
	say "kcat: 100 produced with acks=all to auto-created $topic-kcat, $got consumed"
	[ "$got" = 100 ] || { say "kcat consumed $got of 100"; exit 1; }
fi

# The schema registry: one registry in the metadata store, whichever agent
# answers. Registered through agent1's own listener (the host's 8081), read
# back through agent2's and agent3's HTTP ports (/schema-registry/).
subject=$topic-value
printf '%s\n' '{"type":"record","name":"Reading","fields":[{"name":"celsius","type":"double"}]}' >"$tmp/reading.avsc"
registered=$("$tmp/floe" schema register "$subject" --file "$tmp/reading.avsc" --registry http://127.0.0.1:8081)
say "schema registry :8081: $registered"
schema_id=${registered##* }
schema_seen() {
	"$tmp/floe" schema get --id "$schema_id" --registry "$1" >/dev/null &&
		"$tmp/floe" schema list --registry "$1" | grep -qx "$subject"
}
for p in 8082 8083; do
	schema_seen "http://127.0.0.1:$p/schema-registry" || { say "schema $schema_id ($subject) not served by :$p/schema-registry"; exit 1; }
done
say "schema $schema_id read back through :8082 and :8083/schema-registry"

# The compactor: its jobs ran against PostgreSQL and MinIO without error
# (one round every 10s), and it sees the level-0 objects the agents wrote.
metric() { curl -fsS --max-time 2 http://127.0.0.1:8084/metrics | awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }'; }
deadline=$((SECONDS + 60))
until [ "$(metric 'floe_compactor_jobs_total{job=')" != 0 ] && [ "$(metric 'floe_compactor_objects{')" != 0 ]; do
	[ $SECONDS -lt $deadline ] || { say "compactor ran no job or saw no object in 60s"; curl -sS http://127.0.0.1:8084/metrics | grep '^floe_compactor_' >&2 || true; exit 1; }
	sleep 2
done
errors=$(curl -fsS --max-time 2 http://127.0.0.1:8084/metrics | awk '/^floe_compactor_jobs_total\{/ && /result="error"/ { s += $NF } END { print s + 0 }')
say "compactor: $(metric 'floe_compactor_jobs_total{job=') job runs ($errors errors), $(metric 'floe_compactor_objects{') objects seen"
[ "$errors" = 0 ] || { say "compactor jobs failed"; curl -sS http://127.0.0.1:8084/metrics | grep '^floe_compactor_jobs_total' >&2; exit 1; }

# The records are objects in MinIO, not in an agent: count them with mc on
# the stack's network.
objects=$("$DOCKER" run --rm --network "${PROJECT}_default" --entrypoint sh minio/mc -c \
	'mc alias set local http://minio:9000 floe floe-secret >/dev/null && mc ls --recursive local/floe/objects/ | wc -l')
say "MinIO: $objects objects under floe/objects/"
[ "$objects" -gt 0 ] || { say "no object in the bucket"; exit 1; }

# Agents are stateless: restart all three, and a new group reads every
# record back.
t=$(now)
compose restart agent1 agent2 agent3
wait_ready 8080 8082 8083
say "agents restarted and ready in $(since "$t")"
# Ready agents register with their first heartbeat: Metadata may list fewer
# than three for a moment.
roundtrip -produce=false -group "$topic-2" -broker-wait 30s
# The schema outlives the agents: it is in PostgreSQL.
schema_seen http://127.0.0.1:8081 || { say "schema $schema_id gone after the agents restarted"; exit 1; }
say "schema $schema_id served after the restart"

ok=1
say "PASS"
