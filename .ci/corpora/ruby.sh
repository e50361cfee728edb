#!/usr/bin/env bash
# Ruby corpus: the Ruby 3.1 standard library as Debian ships it (libruby3.1,
# /usr/lib/ruby/3.1.0), every .rb file: about 900. The package is downloaded and
# unpacked under DIR, not installed, so nothing else on the machine changes.
set -euo pipefail
dir="${1:?usage: ruby.sh DIR}"
out="$dir/ruby"
[ -d "$out" ] && exit 0
mkdir -p "$dir"
tmp="$(mktemp -d "$dir/ruby.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -qq libruby3.1 >/dev/null 2>&1); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  (cd "$tmp" && apt-get download -qq libruby3.1 >/dev/null)
fi
dpkg-deb -x "$tmp"/libruby3.1_*.deb "$tmp/root"
mkdir -p "$tmp/tree"
(cd "$tmp/root/usr/lib/ruby/3.1.0" && find . -name '*.rb' -print0 | sort -z |
  tar --null -T - -cf -) | tar -xf - -C "$tmp/tree"
mv "$tmp/tree" "$out"
