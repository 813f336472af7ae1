#!/usr/bin/env bash
# Builds Docker Compose v2 — the `docker compose` CLI plugin users run — from
# its Go module into $FLOE_TOOLS/compose-$VERSION/docker-compose when it is
# missing, and prints that path. For machines whose distribution ships only
# Compose v1 (Debian bookworm: docker-compose 1.29) and reach no download
# site. `go install github.com/docker/compose/v2/cmd@VERSION` refuses the
# module (its go.mod has exclude directives), so a wrapper module outside the
# checkout requires it, repeats its excludes, and builds the command. About
# 6.5 minutes on 2 cores, once.
set -euo pipefail
VERSION=${COMPOSE_VERSION:-v2.40.3}
CACHE=${FLOE_TOOLS:-$HOME/.cache/floe-tools}
OUT=$CACHE/compose-$VERSION/docker-compose
if [ -x "$OUT" ]; then
	echo "$OUT"
	exit 0
fi
GO=${GO:-go}
src=$CACHE/compose-$VERSION-src
mkdir -p "$src" "$(dirname "$OUT")"
cd "$src"
mod=$(GOFLAGS=-mod=mod "$GO" mod download -json "github.com/docker/compose/v2@$VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
[ -s "$mod" ] || { echo "compose-plugin: cannot download github.com/docker/compose/v2@$VERSION" >&2; exit 1; }
{
	echo "module floe-compose-build"
	echo
	sed -n 's/^go \(.*\)/go \1/p' "$mod"
	echo
	echo "require github.com/docker/compose/v2 $VERSION"
	echo
	# The module's exclude block, comments dropped.
	awk '/^exclude \(/ { on = 1; print; next } on && /^\)/ { print; on = 0; next } on && $1 !~ /^\/\// && NF { print }' "$mod"
} >go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/docker/compose/v2/cmd"\n' >tools.go
echo "compose-plugin: building Docker Compose $VERSION (minutes, once)" >&2
GOFLAGS=-mod=mod "$GO" mod tidy >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath \
	-ldflags="-s -w -X github.com/docker/compose/v2/internal.Version=$VERSION" \
	-o "$OUT.part" github.com/docker/compose/v2/cmd
mv "$OUT.part" "$OUT"
echo "$OUT"
