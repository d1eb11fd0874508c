#!/bin/sh
# build.sh VERSION ARCH [OUTDIR]: builds vigil_<version>_<arch>.deb in OUTDIR (default
# build/packages) with dpkg-deb, from this source tree: the static binary (CGO_ENABLED=0,
# -trimpath, as deploy/release/release.sh builds it), vigil.service, the tmpfiles entry,
# /etc/vigil/agent.yaml as a conffile, the maintainer scripts, copyright, changelog and the
# two deployment documents. ARCH is a Debian and Go architecture alike: amd64 or arm64. No
# network beyond Go modules. Timestamps come from SOURCE_DATE_EPOCH (default: the last
# commit's), so two builds of one commit give the same bytes. DEB_COMPRESS chooses dpkg-deb's
# compressor (default xz; the tests use gzip).
# build.sh -debversion VERSION prints the Debian version a package of VERSION gets.
set -eu

# debversion VERSION: the Debian version of a Vigil version. It starts with a digit and has no
# "-" (there is no Debian revision), and dpkg orders it as the releases go: v1.2.3 is 1.2.3; a
# pre-release 1.4.0-rc1 is 1.4.0~rc1, before 1.4.0; git describe's 1.2.3-4-gabc, 4 commits
# after 1.2.3, is 1.2.3+4+gabc, and -dirty is +dirty; a bare commit abc is 0~gitabc.
debversion() {
	v=${1#v}
	suffix=
	case "$v" in *-dirty) suffix=+dirty v=${v%-dirty} ;; esac
	after=$(printf '%s' "$v" | sed -n 's/^.*-\([0-9][0-9]*\)-g\([0-9a-f][0-9a-f]*\)$/+\1+g\2/p')
	if [ -n "$after" ]; then
		v=$(printf '%s' "$v" | sed 's/-[0-9][0-9]*-g[0-9a-f][0-9a-f]*$//')
		suffix="$after$suffix"
	fi
	v=$(printf '%s%s' "$(printf '%s' "$v" | sed -e 's/-/~/' -e 's/-/./g')" "$suffix" | sed 's/[^A-Za-z0-9.+~]/./g')
	case "$v" in
	[0-9]*) ;;
	*) v="0~git$v" ;;
	esac
	printf '%s\n' "$v"
}
if [ "${1:-}" = -debversion ]; then
	debversion "${2:?usage: build.sh -debversion VERSION}"
	exit 0
fi

version=${1:?usage: build.sh VERSION ARCH [OUTDIR]}
arch=${2:?usage: build.sh VERSION ARCH [OUTDIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${3:-$root/build/packages}
case "$arch" in
amd64 | arm64) ;;
*) echo "build.sh: architecture $arch: want amd64 or arm64" >&2; exit 2 ;;
esac

debversion=$(debversion "$version")

: "${SOURCE_DATE_EPOCH:=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH

stage=$(mktemp -d "${TMPDIR:-/tmp}/vigil-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
umask 022

mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/systemd/system" "$stage/usr/lib/tmpfiles.d" \
	"$stage/etc/vigil" "$stage/usr/share/doc/vigil"
# The binary: VIGIL_BINARY when given (make release passes the linux binary it checksums, so
# the package holds the same bytes), else built by the release's recipe, which stamps the
# commit that `vigil version` prints; outside a git clone (a source tarball), without it.
if [ -n "${VIGIL_BINARY:-}" ]; then
	install -m 0755 "$VIGIL_BINARY" "$stage/usr/bin/vigil"
elif git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
	bash "$root/deploy/release/release.sh" binary linux "$arch" "$stage/usr/bin/vigil" "$version"
else
	(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOFLAGS= ${GO:-go} build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version" -o "$stage/usr/bin/vigil" ./cmd/vigil)
fi
install -m 0644 "$here/vigil.service" "$stage/usr/lib/systemd/system/vigil.service"
install -m 0644 "$here/vigil.tmpfiles" "$stage/usr/lib/tmpfiles.d/vigil.conf"
install -m 0644 "$here/agent.yaml" "$stage/etc/vigil/agent.yaml"
install -m 0644 "$here/copyright" "$stage/usr/share/doc/vigil/copyright"
install -m 0644 "$root/docs/agent-config.md" "$stage/usr/share/doc/vigil/agent-config.md"
install -m 0644 "$root/docs/deploy/packages.md" "$stage/usr/share/doc/vigil/packages.md"
date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s/@VERSION@/$debversion/g" -e "s/@DATE@/$date/" "$here/changelog" | gzip -9n >"$stage/usr/share/doc/vigil/changelog.gz"
chmod 0644 "$stage/usr/share/doc/vigil/changelog.gz"

for s in postinst prerm postrm; do
	install -m 0755 "$here/$s" "$stage/DEBIAN/$s"
done
echo /etc/vigil/agent.yaml >"$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$debversion/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" "$here/control" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb="$out/vigil_${debversion}_${arch}.deb"
dpkg-deb --root-owner-group -Z"${DEB_COMPRESS:-xz}" --build "$stage" "$deb" >/dev/null
echo "$deb"
