#!/usr/bin/env bash
# The size of the packaged Windows exe against its target (docs/performance.md, "The exe's
# size"). It builds calicoctl-win.exe as packaging/package.sh does (release profile,
# x86_64-pc-windows-gnu). It prints its size in bytes, and fails when it is over EXE_SIZE_LIMIT
# bytes (default 10000000, 10 MB).
# CI runs it, so a dependency or profile change that crosses the target is seen when it lands.
# Usage: scripts/exe-size.sh   (needs the x86_64-pc-windows-gnu Rust target and gcc-mingw-w64-x86-64)
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${EXE_SIZE_LIMIT:-10000000}"
case "$limit" in
    '' | *[!0-9]*) echo "exe-size: EXE_SIZE_LIMIT must be a number of bytes, not '$limit'" >&2; exit 2 ;;
esac
cargo build --release --locked --quiet --target x86_64-pc-windows-gnu --bin calicoctl-win
target=$(cargo metadata --no-deps --format-version 1 --locked \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
exe="$target/x86_64-pc-windows-gnu/release/calicoctl-win.exe"
# No user32.dll, gdi32.dll or shell32.dll among its imports: its console handler must get
# CTRL_SHUTDOWN_EVENT (scripts/exe-imports.sh).
scripts/exe-imports.sh "$exe"
size=$(stat -c %s "$exe")
echo "calicoctl-win.exe (release, x86_64-pc-windows-gnu): $size bytes (target <= $limit)"
if [ "$size" -gt "$limit" ]; then
    echo "exe-size: $exe is $size bytes, over the target of $limit: see the release profile in Cargo.toml and docs/performance.md, \"The exe's size\"" >&2
    exit 1
fi
