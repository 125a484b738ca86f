#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 10: CI's smoke run; a longer run is
# `fuzz/run.sh 1800`). Seeds come from the project's own fixtures and fuzz/seeds; what the
# fuzzer finds and any crash stay under target/ (target/fuzz-corpus, target/fuzz-artifacts).
# The targets are built as cargo-fuzz builds them (rust-fuzz/cargo-fuzz `src/project.rs`,
# `Project::cargo`, at 02471f053f: libFuzzer's coverage passes, no branch folding,
# `--cfg fuzzing`, dead code linked, stack depth on Linux, the host triple given so build
# scripts stay uninstrumented, one codegen unit in release), by cargo itself: no cargo-fuzz to
# compile on a fresh machine. By default in the dev profile
# (debug assertions and overflow checks) and without AddressSanitizer, so CI builds them in
# minutes; FUZZ_RELEASE=1 builds optimised, FUZZ_ASAN=1 adds AddressSanitizer (the stable
# toolchain takes the flag with RUSTC_BOOTSTRAP=1), as `cargo fuzz` does by default.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="$(pwd)/target/fuzz"
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags="$flags -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags="$flags -Cllvm-args=-sanitizer-coverage-pc-table"
flags="$flags -Cllvm-args=-sanitizer-coverage-trace-compares"
flags="$flags -Cllvm-args=-simplifycfg-branch-fold-threshold=0 --cfg fuzzing -Clink-dead-code"
flags="$flags -Cllvm-args=-sanitizer-coverage-stack-depth"
profile=debug
build_args=()
if [ "${FUZZ_RELEASE:-0}" = 1 ]; then
    profile=release
    build_args+=(--release)
    # cargo-fuzz's release build has one codegen unit; debug assertions and overflow checks
    # are kept as `cargo fuzz --debug-assertions` keeps them.
    flags="$flags -Ccodegen-units=1 -Cdebug-assertions -Coverflow-checks"
fi
if [ "${FUZZ_ASAN:-0}" = 1 ]; then
    flags="$flags -Zsanitizer=address"
    export RUSTC_BOOTSTRAP=1
fi

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

RUSTFLAGS="$flags" cargo build --locked --manifest-path fuzz/Cargo.toml --target "$host" \
    --target-dir "$target_dir" --bins "${build_args[@]}"
for t in config_yaml import_ps1 hns_json env_file zip_listing selector; do
    corpus="target/fuzz-corpus/$t"
    artifacts="target/fuzz-artifacts/$t/"
    mkdir -p "$corpus" "$artifacts"
    echo "== fuzz $t for ${seconds}s"
    log="target/fuzz-artifacts/$t.log"
    # shellcheck disable=SC2046
    if ! "$target_dir/$host/$profile/$t" "$corpus" $(seeds "$t") \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=20 \
        -artifact_prefix="$artifacts" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "error: fuzz target $t failed; its input is in $artifacts (replay: $target_dir/$host/$profile/$t FILE)" >&2
        exit 1
    fi
    grep -E "^Done|INFO: seed corpus: files" "$log" || true
done
