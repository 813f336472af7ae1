#!/usr/bin/env bash
# Builds local stand-ins for the public images deploy/docker-compose.yml
# pulls — postgres:15, minio/minio and minio/mc — for machines that reach no
# container registry. A user with Docker Hub never needs this: `docker compose
# up` pulls the real ones. Each image is skipped when its tag already exists
# (FORCE=1 rebuilds), and what takes long is cached outside the checkout:
#
#   postgres:15   Debian bookworm's postgresql-15 on a `debootstrap --variant=minbase`
#                 root (cached as a tarball), imported with `docker import`,
#                 plus an entrypoint doing what the compose file uses of the
#                 official one (standin/postgres/docker-entrypoint.sh)
#   minio/minio   the MinIO server binary `make minio` builds, on the same root
#   minio/mc      mc, built from its Go module, on the same root as postgres
#
# Needs root (debootstrap), a Docker engine, and apt's Debian mirror and the
# Go module proxy the first time only.
set -euo pipefail
cd "$(dirname "$0")"

DOCKER=${DOCKER:-docker}
CACHE=${FLOE_TOOLS:-$HOME/.cache/floe-tools}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
MINIO_VERSION=${MINIO_VERSION:-20260212201848}
MINIO_BIN=${MINIO_BIN:-$CACHE/minio-$MINIO_VERSION/minio}
MC_MODULE=github.com/minio/mc
MC_VERSION=${MC_VERSION:-v0.0.0-20250313080218-cf909e1063a9}
MC_DIR=$CACHE/mc-$(echo "$MC_VERSION" | cut -d- -f2)
ROOTFS_TAR=$CACHE/standin/bookworm-minbase-postgresql-15.tar
BASE=floe-standin/bookworm-postgresql:15

have() { [ -z "${FORCE:-}" ] && "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
say() { echo "standin-images: $*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The debootstrap root with PostgreSQL 15, shared by all three.
if ! have "$BASE"; then
	if [ ! -s "$ROOTFS_TAR" ]; then
		command -v debootstrap >/dev/null || apt-get install -y debootstrap
		say "debootstrap bookworm minbase + postgresql-15 (a few minutes, once)"
		root=$tmp/rootfs
		debootstrap --variant=minbase --include=postgresql-15 bookworm "$root" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 ||
			{ tail -30 "$tmp/debootstrap.log" >&2; exit 1; }
		# The package's postinst made a "main" cluster: the entrypoint
		# makes its own in PGDATA, as the official image does.
		rm -rf "$root"/var/lib/postgresql/15 "$root"/etc/postgresql/15
		rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
		mkdir -p "$(dirname "$ROOTFS_TAR")"
		tar -C "$root" --numeric-owner -cf "$ROOTFS_TAR.part" .
		mv "$ROOTFS_TAR.part" "$ROOTFS_TAR"
	fi
	say "import $BASE"
	"$DOCKER" import - "$BASE" <"$ROOTFS_TAR" >/dev/null
fi

if ! have postgres:15; then
	say "build postgres:15"
	"$DOCKER" build -q --build-arg BASE="$BASE" -t postgres:15 standin/postgres >/dev/null
fi

if ! have minio/minio; then
	[ -x "$MINIO_BIN" ] || { say "no MinIO binary at $MINIO_BIN (make minio)"; exit 1; }
	say "build minio/minio from $MINIO_BIN"
	mkdir -p "$tmp/minio"
	cp "$MINIO_BIN" standin/minio/Dockerfile "$tmp/minio/"
	"$DOCKER" build -q --build-arg BASE="$BASE" -t minio/minio "$tmp/minio" >/dev/null
fi

if ! have minio/mc; then
	if [ ! -x "$MC_DIR/mc" ]; then
		say "go install $MC_MODULE@$MC_VERSION (a few minutes, once)"
		mkdir -p "$MC_DIR"
		CGO_ENABLED=0 GOBIN=$MC_DIR GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' "$MC_MODULE@$MC_VERSION"
	fi
	say "build minio/mc"
	mkdir -p "$tmp/mc"
	cp "$MC_DIR/mc" standin/mc/Dockerfile "$tmp/mc/"
	"$DOCKER" build -q --build-arg BASE="$BASE" -t minio/mc "$tmp/mc" >/dev/null
fi

"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E '^(postgres:15|minio/minio|minio/mc|floe-standin/)' >&2
