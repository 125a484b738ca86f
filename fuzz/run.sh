#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 10: CI's smoke run; a longer run is
# `fuzz/run.sh 1800`). Seeds come from the project's own fixtures and fuzz/seeds; what the
# fuzzer finds and any crash stay under target/ (target/fuzz-corpus, target/fuzz-artifacts).
# Needs cargo-fuzz (installed into target/tools when missing). The targets build with the
# machine's stable toolchain (RUSTC_BOOTSTRAP=1 lets it take the sanitizer flags), in debug
# with overflow checks and without AddressSanitizer (-s none) by default, so CI builds them in
# minutes; FUZZ_BUILD="-O -s address" builds as cargo fuzz does by default.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
build="${FUZZ_BUILD:---dev -s none}"
tools="$(pwd)/target/tools"
if ! command -v cargo-fuzz >/dev/null && [ ! -x "$tools/bin/cargo-fuzz" ]; then
    cargo install cargo-fuzz --locked --version 0.13.2 --root "$tools"
fi
export PATH="$tools/bin:$PATH" RUSTC_BOOTSTRAP=1
target_dir="$(pwd)/target/fuzz"

seeds() {
    case "$1" in
        config_yaml) echo templates tests/bad-configs $(ls -d tests/golden/*/) ;;
        import_ps1) echo tests/import-ps1 fuzz/seeds/import_ps1 ;;
        hns_json) echo fuzz/seeds/hns_json $(ls -d tests/golden/*/expected/) ;;
        env_file) echo $(ls -d tests/golden/*/expected/) ;;
        zip_listing) echo fuzz/seeds/zip_listing ;;
        selector) echo fuzz/seeds/selector tests/calico-selector ;;
    esac
}

# shellcheck disable=SC2086
cargo fuzz build $build --target-dir "$target_dir"
for t in config_yaml import_ps1 hns_json env_file zip_listing selector; do
    corpus="target/fuzz-corpus/$t"
    artifacts="target/fuzz-artifacts/$t/"
    mkdir -p "$corpus" "$artifacts"
    echo "== fuzz $t for ${seconds}s"
    log="target/fuzz-artifacts/$t.log"
    # shellcheck disable=SC2046,SC2086
    if ! cargo fuzz run $build --target-dir "$target_dir" "$t" "$corpus" $(seeds "$t") -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=20 \
        -artifact_prefix="$artifacts" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "error: fuzz target $t failed; its input is in $artifacts (replay: cargo fuzz run $t FILE)" >&2
        exit 1
    fi
    grep -E "^Done|INFO: seed corpus: files" "$log" || true
done
