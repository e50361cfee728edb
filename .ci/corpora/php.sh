#!/usr/bin/env bash
# PHP corpus: three well-known libraries as Debian 12 packages them, downloaded and
# unpacked under DIR, not installed: Doctrine DBAL, Symfony Console and Monolog
# (php-doctrine-dbal, php-symfony-console, php-monolog; their /usr/share/php trees).
# About 550 .php files.
set -euo pipefail
dir="${1:?usage: php.sh DIR}"
out="$dir/php"
[ -d "$out" ] && exit 0
mkdir -p "$dir"
tmp="$(mktemp -d "$dir/php.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
packages="php-doctrine-dbal php-symfony-console php-monolog"
# shellcheck disable=SC2086
if ! (cd "$tmp" && apt-get download -qq $packages >/dev/null 2>&1); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  (cd "$tmp" && apt-get download -qq $packages >/dev/null)
fi
for deb in "$tmp"/*.deb; do
  dpkg-deb -x "$deb" "$tmp/root"
done
mkdir -p "$tmp/tree"
(cd "$tmp/root/usr/share/php" && find . -name '*.php' -print0 | sort -z |
  tar --null -T - -cf -) | tar -xf - -C "$tmp/tree"
mv "$tmp/tree" "$out"
