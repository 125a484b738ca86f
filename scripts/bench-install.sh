#!/usr/bin/env bash
# Benchmark: download + verify + extract of a ~100 MB release zip over loopback, calicoctl-win
# (`fetch release`) against curl + sha256sum + unzip doing the same work one after the other.
# The zip is compressible as Calico's is (its executables deflate to about 45%). Prints both
# medians, their ratio (target <= 0.25) and calicoctl-win's peak RSS measured by GNU time (%M),
# never by this driver, whose own pages Linux would charge to a child it forks.
# Usage: scripts/bench-install.sh [RUNS] [SIZE_MB]   (defaults 5 and 100)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
SIZE_MB="${2:-100}"
for tool in curl sha256sum unzip python3 /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench-install: $tool is needed (apt-get install -y $tool)" >&2; exit 1; }
done
cargo build --release --quiet
exec python3 - "$RUNS" "$SIZE_MB" <<'PY'
import hashlib, http.server, os, random, shutil, statistics, subprocess, sys, tempfile, threading, time, zipfile

runs, size_mb = int(sys.argv[1]), int(sys.argv[2])
exe = os.path.abspath("target/release/calicoctl-win")
work = tempfile.mkdtemp(prefix="calicoctl-win-bench-")
serve = os.path.join(work, "serve")
os.makedirs(serve)
zip_path = os.path.join(serve, "calico-windows-v3.30.2.zip")
# The real layout (calico-node.exe about two thirds of it, the CNI plugins the rest). Go
# executables deflate to about 45%: each block is a third random bytes and two thirds words
# drawn from a small vocabulary, which deflates alike.
rng = random.Random(7)
words = [os.urandom(16) for _ in range(256)]
def block():
    return os.urandom(22 * 1024) + b"".join(rng.choices(words, k=2688))
mb = 1024 * 1024
with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
    for name, share in [("calico-node.exe", 0.64), ("cni/calico.exe", 0.18), ("cni/calico-ipam.exe", 0.18)]:
        with z.open("CalicoWindows/" + name, "w", force_zip64=True) as f:
            for _ in range(int(size_mb * share * mb) // 65536):
                f.write(block())
    z.writestr("CalicoWindows/cni.conf.template", "{}\n")
expanded = sum(i.file_size for i in zipfile.ZipFile(zip_path).infolist())
h = hashlib.sha256()
with open(zip_path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
sha = h.hexdigest()
print(f"zip: {os.path.getsize(zip_path) / 1048576:.1f} MB expanding to {expanded / 1048576:.1f} MB, {runs} runs each")

class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=serve, **k)
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/calico-windows-v3.30.2.zip"

rss_file = os.path.join(work, "rss")
def timed(cmd, shell=False):
    """Runs one command in a fresh output dir: wall time and its peak RSS in KB (GNU time)."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    argv = ["/usr/bin/time", "-f", "%M", "-o", rss_file] + (["sh", "-c", cmd(out)] if shell else cmd(out))
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=out, env={"PATH": os.environ["PATH"]},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {cmd(out)}")
    with open(rss_file) as f:
        return elapsed, int(f.read().split()[-1])

ours = lambda out: [exe, "fetch", "release", "--release-zip", url, "--sha256", sha,
                    "--allow-http", "--output-dir", out]
theirs = lambda out: (f"curl -sSf -o calico.zip {url} && echo '{sha}  calico.zip' | sha256sum -c --quiet"
                      f" && unzip -q calico.zip -d .")
a, b, peak = [], [], 0
for _ in range(runs):
    t, rss = timed(ours)
    a.append(t)
    peak = max(peak, rss)
    b.append(timed(theirs, shell=True)[0])
ma, mt = statistics.median(a), statistics.median(b)
print(f"calicoctl-win fetch release: median {ma:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in a)})")
print(f"curl + sha256sum + unzip:    median {mt:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in b)})")
print(f"ratio calicoctl-win / tools: {ma / mt:.2f}  (target <= 0.25)")
print(f"calicoctl-win peak RSS: {peak / 1024:.1f} MiB  (GNU time; target <= 20 MB)")
server.shutdown()
shutil.rmtree(work, ignore_errors=True)
PY
