#!/bin/sh
# Stand-in for the official postgres image's entrypoint, as far as
# deploy/docker-compose.yml uses it: on an empty PGDATA, initdb with
# POSTGRES_USER and POSTGRES_PASSWORD, the database POSTGRES_DB, local and
# loopback connections trusted and every other host by scram-sha-256
# password, listening on every address on 5432; then the server runs as the
# postgres user in the foreground. POSTGRES_HOST_AUTH_METHOD,
# POSTGRES_INITDB_ARGS and /docker-entrypoint-initdb.d are not implemented.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA

case "${1:-postgres}" in
-*) set -- postgres "$@" ;;
esac
[ $# -gt 0 ] || set -- postgres

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "postgres: POSTGRES_PASSWORD is not set (the official image refuses too)" >&2
		exit 1
	fi
	pw=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
	initdb --username="$POSTGRES_USER" --pwfile="$pw" --auth=trust >/dev/null
	rm -f "$pw"
	printf '\nhost all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
	printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\"" |
			postgres --single -D "$PGDATA" postgres >/dev/null
	fi
	echo "postgres: initialized $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi

exec "$@"
