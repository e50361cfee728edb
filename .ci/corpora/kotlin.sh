#!/usr/bin/env bash
# Kotlin corpus: the Android sources that expo-modules-core 2.1.1 and
# react-native-screens 4.4.0 ship in their npm packages, every .kt and .kts file
# (about 260). Fetched with `npm pack` from the npm registry; writes only under
# DIR/kotlin.
set -euo pipefail
dir="${1:?usage: kotlin.sh DIR}"
out="$dir/kotlin"
[ -d "$out" ] && exit 0
command -v npm >/dev/null || {
	echo "kotlin.sh: needs npm" >&2
	exit 1
}
tmp="$dir/.kotlin.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
(cd "$tmp" && npm pack --silent --cache "$tmp/npm-cache" expo-modules-core@2.1.1 \
	react-native-screens@4.4.0 >/dev/null)
stage="$tmp/kotlin"
for pkg in expo-modules-core-2.1.1 react-native-screens-4.4.0; do
	mkdir -p "$tmp/$pkg" "$stage/$pkg"
	tar -xzf "$tmp/$pkg.tgz" -C "$tmp/$pkg" --strip-components=1
	(cd "$tmp/$pkg" && find . \( -name '*.kt' -o -name '*.kts' \) -print0 |
		xargs -0 cp --parents -t "$stage/$pkg")
done
mv "$stage" "$out"
rm -rf "$tmp"
