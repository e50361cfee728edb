#!/usr/bin/env bash
# Shell corpus: bash-completion 2.11 as Debian ships it (/usr/share/bash-completion),
# its library script and every completion that is a file of its own (the rest are
# symlinks to those): about 450 bash scripts. Completions have no extension, and
# ctags (like find_symbol) picks the shell language by extension, so each is copied
# as NAME.bash. The package is downloaded and unpacked under DIR, not installed.
set -euo pipefail
dir="${1:?usage: bash.sh DIR}"
out="$dir/bash"
[ -d "$out" ] && exit 0
mkdir -p "$dir"
tmp="$(mktemp -d "$dir/bash.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -qq bash-completion >/dev/null 2>&1); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  (cd "$tmp" && apt-get download -qq bash-completion >/dev/null)
fi
dpkg-deb -x "$tmp"/bash-completion_*.deb "$tmp/root"
src="$tmp/root/usr/share/bash-completion"
mkdir -p "$tmp/tree/completions"
cp "$src/bash_completion" "$tmp/tree/bash_completion.bash"
# helpers/ holds a Perl and a Python script, so it is left out.
find "$src/completions" -type f -print0 | sort -z |
  while IFS= read -r -d '' file; do
    rel="${file#"$src"/}"
    case "$rel" in
      *.sh | *.bash) cp "$file" "$tmp/tree/$rel" ;;
      *) cp "$file" "$tmp/tree/$rel.bash" ;;
    esac
  done
mv "$tmp/tree" "$out"
