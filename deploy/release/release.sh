#!/usr/bin/env bash
# Vigil's release: `make release VERSION=x.y.z` runs `release.sh all x.y.z`; a test runs
# `release.sh binary` to check that two builds give the same bytes. Commands:
#
#   release.sh binary GOOS GOARCH OUT VERSION   one static binary, as a release builds it
#   release.sh all VERSION [DIST]               everything below, into DIST (default dist/)
#
# `all` writes: vigil-VERSION-{linux,darwin}-{amd64,arm64} (static, CGO_ENABLED=0, -trimpath,
# the commit and its time stamped by -buildvcs, fixed -ldflags: two builds of one commit are
# byte-identical); the .deb packages of those linux binaries (deploy/debian/build.sh); the container
# image as a `docker save` tarball when a Docker engine answers (a line says so when not);
# vigil-VERSION.cdx.json, a CycloneDX SBOM of the linux/amd64 binary; CHANGELOG-VERSION.md,
# the section of CHANGELOG.md for VERSION; SHA256SUMS of all of it, checked after writing.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
# The SBOM tool, run from its Go module at a pinned version.
CYCLONEDX=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

die() { echo "release: $*" >&2; exit 1; }

# binary GOOS GOARCH OUT VERSION: the flags are the release's whole recipe; the environment's
# GOFLAGS are replaced so that a developer's settings cannot change the bytes.
# The commit and its time go in by -ldflags as well as by -buildvcs, which leaves them out of a
# git worktree (its .git is a file).
binary() {
  local goos=$1 goarch=$2 out=$3 version=$4 rev at
  rev=$(git rev-parse HEAD)
  [ -z "$(git status --porcelain --untracked-files=no)" ] || rev+=+dirty
  at=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOFLAGS= GOEXPERIMENT= \
    "$GO" build -trimpath -buildvcs=auto \
    -ldflags "-s -w -X main.version=$version -X main.commit=$rev -X main.commitTime=$at" -o "$out" ./cmd/vigil
}

# changelog VERSION: the section "## VERSION" of CHANGELOG.md (to the next "## "); a
# pre-release (x.y.z-rc1) without a section of its own takes "## Unreleased".
changelog() {
  local version=$1 section
  section=$(awk -v v="$version" '
    /^## / { if (on) exit; h=$2; if (h == v || h == "[" v "]") on=1 }
    on' CHANGELOG.md)
  if [ -z "$section" ] && [[ $version == *-* ]]; then
    section=$(awk '/^## / { if (on) exit; if ($2 == "Unreleased") on=1 } on' CHANGELOG.md)
  fi
  [ -n "$section" ] || die "CHANGELOG.md has no section \"## $version\": rename \"## Unreleased\" to \"## $version ($(date -u +%F))\" and commit it"
  printf '%s\n' "$section"
}

all() {
  local version=$1 dist=${2:-dist}
  [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "VERSION=$version: want a semantic version such as 1.4.0 or 1.4.0-rc1 (make release VERSION=1.4.0)"
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && [ "${ALLOW_DIRTY:-}" != 1 ]; then
    die "the work tree has uncommitted changes, which the binaries would carry as +dirty: commit them (or ALLOW_DIRTY=1 for a trial)"
  fi
  rm -rf "$dist" && mkdir -p "$dist"
  changelog "$version" >"$dist/CHANGELOG-$version.md"

  local p
  for p in "${PLATFORMS[@]}"; do
    echo "release: vigil $version ${p%/*}/${p#*/}"
    binary "${p%/*}" "${p#*/}" "$dist/vigil-$version-${p%/*}-${p#*/}" "$version"
  done
  # The same bytes from an empty build cache: nothing of this machine's cache or temporary
  # paths is in the binaries (the quick form of this check runs in make test).
  local again
  again=$(mktemp -d)
  echo "release: linux/amd64 again, from an empty build cache"
  GOCACHE="$again/cache" TMPDIR="$again" binary linux amd64 "$again/vigil" "$version"
  cmp -s "$again/vigil" "$dist/vigil-$version-linux-amd64" ||
    die "two builds of linux/amd64 differ: compare go version -m $again/vigil $dist/vigil-$version-linux-amd64"
  chmod -R u+w "$again" && rm -rf "$again"

  # The packages hold the linux binaries just built: the bytes SHA256SUMS lists.
  for arch in amd64 arm64; do
    VIGIL_BINARY="$dist/vigil-$version-linux-$arch" deploy/debian/build.sh "$version" "$arch" "$dist"
  done

  if docker info >/dev/null 2>&1; then
    mkdir -p bin build/data
    cp "$dist/vigil-$version-linux-amd64" bin/vigil
    cp /etc/ssl/certs/ca-certificates.crt build/ca-certificates.crt
    docker build -q -t "vigil:$version" . >/dev/null
    docker save "vigil:$version" | gzip -n >"$dist/vigil-$version-image-linux-amd64.tar.gz"
  else
    echo "release: no container image: no Docker engine answers here (docker info); build it where one does with make image"
  fi

  echo "release: SBOM (CycloneDX) of the linux/amd64 binary"
  GOFLAGS= "$GO" run "$CYCLONEDX" bin -json -std -noserial -notimestamp -version "$version" -output "$dist/vigil-$version.cdx.json" "$dist/vigil-$version-linux-amd64"

  (cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
  echo "release: $version in $dist/:"
  (cd "$dist" && ls -l)
}

cmd=${1:-}
shift || true
case $cmd in
binary) [ $# -eq 4 ] || die "usage: release.sh binary GOOS GOARCH OUT VERSION"; binary "$@" ;;
all) [ $# -ge 1 ] || die "usage: release.sh all VERSION [DIST]"; all "$@" ;;
*) die "usage: release.sh binary GOOS GOARCH OUT VERSION | all VERSION [DIST]" ;;
esac
