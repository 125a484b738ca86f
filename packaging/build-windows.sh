#!/usr/bin/env bash
# Cross-compiles calicoctl-win.exe and collects it with its templates in target/dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --target x86_64-pc-windows-gnu
dist=target/dist/calicoctl-win
rm -rf "$dist"
mkdir -p "$dist"
cp target/x86_64-pc-windows-gnu/release/calicoctl-win.exe "$dist/"
cp templates/calico-windows.yaml templates/cni.conf.template README.md "$dist/"
echo "$dist"
