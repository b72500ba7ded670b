#!/usr/bin/env bash
# Print the path of a tool the deploy tests check with, building or installing it into the project's cache once:
#
#   scripts/tools.sh helm             Helm, built from its Go module with the machine's Go toolchain (Helm ships no
#                                     Python package, and the machines reach package registries only)
#   scripts/tools.sh node-validators  the npm packages of tests/deploy/node/package.json (pinned with its lock):
#                                     Strimzi's and the Prometheus operator's compiled CRD schema validators and
#                                     Prometheus' PromQL grammar
#
# The cache is $PLACEMENT_CACHE_DIR or the checkout's .cache: <cache>/tools/helm-<version>/helm and
# <cache>/tools/node-validators-<hash of package.json and its lock>. A tool already there is reused without
# touching the network; a build goes to a temporary folder first and is moved in whole, so an interrupted one
# is never mistaken for a finished one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PLACEMENT_CACHE_DIR:-$ROOT/.cache}"
HELM_VERSION="${HELM_VERSION:-v4.3.2}"
NODE_PACKAGES="$ROOT/tests/deploy/node"

build_helm() {  # $1: staging folder
    command -v go >/dev/null || { echo "tools.sh: Go is needed to build Helm $HELM_VERSION" >&2; return 1; }
    # one package at a time: the machines are shared, and the Go build cache makes a rebuild cheap
    GOBIN="$1" GOFLAGS="${GOFLAGS:-} -p=1" CGO_ENABLED=0 \
        go install -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
        "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
}

build_node_validators() {  # $1: staging folder
    command -v npm >/dev/null || { echo "tools.sh: Node.js and npm are needed" >&2; return 1; }
    cp "$NODE_PACKAGES/package.json" "$NODE_PACKAGES/package-lock.json" "$1/"
    # the packages ask for Node 22 and run on 20 (what the machines have): only the engine check is relaxed
    (cd "$1" && npm ci --no-audit --no-fund --engine-strict=false --loglevel=error >&2)
}

case "${1:-}" in
    helm)
        TARGET="$CACHE/tools/helm-$HELM_VERSION" RESULT=helm ;;
    node-validators)
        STAMP="$(cat "$NODE_PACKAGES/package.json" "$NODE_PACKAGES/package-lock.json" | sha256sum | cut -c1-12)"
        TARGET="$CACHE/tools/node-validators-$STAMP" RESULT=. ;;
    *)
        echo "usage: scripts/tools.sh helm|node-validators" >&2; exit 2 ;;
esac

if [[ ! -e "$TARGET/$RESULT" ]]; then
    mkdir -p "$CACHE/tools"
    STAGING="$(mktemp -d "$CACHE/tools/.$1.XXXXXX")"
    trap 'rm -rf "$STAGING"' EXIT
    "build_${1//-/_}" "$STAGING"
    chmod 755 "$STAGING"
    rm -rf "$TARGET"
    mv "$STAGING" "$TARGET"
    trap - EXIT
fi
realpath "$TARGET/$RESULT"
