#!/usr/bin/env bash
# Builds a calicoctl-win release: the Windows exe (release profile, with its version resource),
# then packaging/package.py lays out the zip, SHA256SUMS and the winget manifests in
# <target dir>/release-artifacts/ (target/, or CARGO_TARGET_DIR). The same commit gives the same bytes (every date is the commit's).
# Usage: packaging/package.sh https://host/path/to/the/release/download
# Needs: the x86_64-pc-windows-gnu Rust target and Debian's gcc-mingw-w64-x86-64 (windres).
set -euo pipefail
cd "$(dirname "$0")/.."
url_base="${1:-}"
if [ -z "$url_base" ]; then
    echo "usage: packaging/package.sh URL_BASE   (where the zip will be published, for winget)" >&2
    exit 2
fi
# The version, and where cargo builds: `target_directory` honours CARGO_TARGET_DIR and
# build.target-dir as cargo itself does.
meta=$(cargo metadata --no-deps --format-version 1 --locked)
version=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["version"])' <<<"$meta")
target=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")
date="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}"
cargo build --release --locked --target x86_64-pc-windows-gnu --bin calicoctl-win
exe="$target/x86_64-pc-windows-gnu/release/calicoctl-win.exe"
work="$target/release-artifacts"
rm -rf "$work"
mkdir -p "$work"
# The completion script is generated from the command line's definition, the same on every
# platform: this machine's build writes it.
cargo run --quiet --locked -- completions powershell >"$work/calicoctl-win-completion.ps1"
python3 packaging/package.py --exe "$exe" --completion "$work/calicoctl-win-completion.ps1" \
    --version "$version" --date "$date" --url-base "$url_base" --out "$work"
rm "$work/calicoctl-win-completion.ps1"
