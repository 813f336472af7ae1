#!/usr/bin/env bash
# Builds the tools `make k8s-test` runs, from the Go module proxy, into a directory outside
# the checkout keyed by version (the Makefile calls this only when the binary is missing):
#
#   scripts/k8s-tools.sh kubernetes DIR VERSION      kube-apiserver, kube-controller-manager,
#                                                    kube-scheduler, kubelet (12 min measured
#                                                    with part of Go's build cache warm; about
#                                                    25 min fully cold)
#   scripts/k8s-tools.sh etcd DIR VERSION            etcd (1.5 min)
#   scripts/k8s-tools.sh metrics-server DIR VERSION  metrics-server (5.5 min)
#
# Binaries are built in DIR.build and DIR appears (renamed from DIR.build/bin) only when all
# of them built, so a killed build leaves nothing the Makefile would take for finished.
set -euo pipefail

what=$1 dir=$2 version=$3
GO=${GO:-go}
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
work=$dir.build
mkdir -p "$work"
cd "$work"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# A wrapper module: the tools' own go.mod files carry replace directives, so `go install
# pkg@version` refuses them; a module of our own that requires them (and repeats the
# replaces that matter) builds them.
newmod() {
	rm -f go.mod go.sum
	$GO mod init "floe-tools-$what" >/dev/null 2>&1
}

case $what in
kubernetes)
	# k8s.io/kubernetes replaces every k8s.io staging module with ./staging/src/...; the
	# published staging modules are tagged v0.<minor>.<patch>.
	minor=${version#v1.}
	newmod
	$GO mod edit -require="k8s.io/kubernetes@$version"
	mod=$($GO mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
	for m in $(sed -n 's#^\t\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$mod"); do
		$GO mod edit -replace="$m=$m@v0.$minor"
	done
	cat >tools.go <<-'EOF'
	//go:build tools

	package tools

	import (
		_ "k8s.io/kubernetes/cmd/kube-apiserver"
		_ "k8s.io/kubernetes/cmd/kube-controller-manager"
		_ "k8s.io/kubernetes/cmd/kube-scheduler"
		_ "k8s.io/kubernetes/cmd/kubelet"
	)
	EOF
	$GO mod tidy -e
	IFS=. read -r major mi _ <<<"${version#v}"
	ld="-s -w"
	for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		ld="$ld -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$mi -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	done
	rm -rf bin && mkdir bin
	$GO build -trimpath -ldflags="$ld" -o bin/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet
	;;
etcd)
	# etcd's server module also has replace directives; etcdmain.Main is the etcd binary.
	newmod
	mkdir -p cmd/etcd
	cat >cmd/etcd/main.go <<-'EOF'
	// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3's etcdmain.
	package main

	import (
		"os"

		"go.etcd.io/etcd/server/v3/etcdmain"
	)

	func main() { etcdmain.Main(os.Args) }
	EOF
	$GO get "go.etcd.io/etcd/server/v3@$version"
	$GO mod tidy
	rm -rf bin && mkdir bin
	$GO build -trimpath -ldflags="-s -w" -o bin/etcd ./cmd/etcd
	;;
metrics-server)
	rm -rf bin && mkdir bin
	GOBIN=$work/bin $GO install -trimpath -ldflags="-s -w" "sigs.k8s.io/metrics-server/cmd/metrics-server@$version"
	;;
*)
	echo "k8s-tools.sh: unknown tool $what" >&2
	exit 2
	;;
esac

cd /
rm -rf "$dir"
mv "$work/bin" "$dir"
rm -rf "$work"
