#!/usr/bin/env bash
# C corpus: libgit2 (include/, src/, deps/), as vendored in the libgit2-sys crate that
# metron itself depends on, so it is always in the cargo registry once the project has
# been built. Copied, not linked, so the tree stays put when the registry is cleaned.
# Usage: c.sh DIR  ->  DIR/c/libgit2. Does nothing when DIR/c is already there.
set -euo pipefail
dir="${1:?usage: c.sh DIR}"
out="$dir/c"
[ -d "$out" ] && exit 0
registry="${CARGO_HOME:-${HOME:?c.sh: set HOME or CARGO_HOME}/.cargo}/registry/src"
here="$(cd "$(dirname "$0")/../.." && pwd)"
# The libgit2-sys version Cargo.lock pins, so the corpus is the same on every machine.
version="$(awk '/^name = "libgit2-sys"$/ { getline; gsub(/[" ]/, ""); sub(/^version=/, ""); print; exit }' "$here/Cargo.lock")"
[ -n "$version" ] || { echo "c.sh: no libgit2-sys in Cargo.lock" >&2; exit 1; }
find_src() {
    find "$registry" -mindepth 3 -maxdepth 3 -type d -path "*/libgit2-sys-$version/libgit2" 2>/dev/null | head -n 1
}
src="$(find_src)"
if [ -z "$src" ]; then
    # Not fetched yet: fetch the project's dependencies (libgit2-sys among them).
    (cd "$here" && cargo fetch --quiet)
    src="$(find_src)"
fi
[ -n "$src" ] || { echo "c.sh: no libgit2-sys-$version in $registry" >&2; exit 1; }
tmp="$dir/.c.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/libgit2"
for part in include src deps; do
    cp -R "$src/$part" "$tmp/libgit2/"
done
mv "$tmp" "$out"
