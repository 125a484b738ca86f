#!/usr/bin/env bash
# Benchmark: download + verify + extract of a ~100 MB release zip over loopback, calicoctl-win
# (`fetch release`) against curl + sha256sum + unzip doing the same work. Prints both medians,
# their ratio (target <= 1.0) and calicoctl-win's peak RSS (target <= 60 MB).
# Usage: scripts/bench-install.sh [RUNS] [SIZE_MB]   (defaults 5 and 100)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
SIZE_MB="${2:-100}"
for tool in curl sha256sum unzip python3; do
    command -v "$tool" >/dev/null || { echo "bench-install: $tool is needed (apt-get install -y $tool)" >&2; exit 1; }
done
cargo build --release --quiet
exec python3 - "$RUNS" "$SIZE_MB" <<'PY'
import hashlib, http.server, os, shutil, statistics, subprocess, sys, tempfile, threading, time, zipfile

runs, size_mb = int(sys.argv[1]), int(sys.argv[2])
exe = os.path.abspath("target/release/calicoctl-win")
work = tempfile.mkdtemp(prefix="calicoctl-win-bench-")
serve = os.path.join(work, "serve")
os.makedirs(serve)
zip_path = os.path.join(serve, "calico-windows-v3.30.2.zip")
# The real layout; the binaries are incompressible bytes, as executables nearly are. Made in a
# child process: Linux counts a child's memory before exec in its peak RSS, so this driver
# stays small for the measurement to be calicoctl-win's own.
subprocess.run([sys.executable, "-c", f"""
import os, zipfile
mb = 1024 * 1024
with zipfile.ZipFile({zip_path!r}, "w", zipfile.ZIP_DEFLATED) as z:
    for name, size in [("calico-node.exe", {size_mb} * mb * 9 // 10), ("cni/calico.exe", {size_mb} * mb // 20),
                       ("cni/calico-ipam.exe", {size_mb} * mb // 20)]:
        with z.open("CalicoWindows/" + name, "w", force_zip64=True) as f:
            for _ in range(size // mb):
                f.write(os.urandom(mb))
    z.writestr("CalicoWindows/cni.conf.template", "{{}}\\n")
"""], check=True)
h = hashlib.sha256()
with open(zip_path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
sha = h.hexdigest()
print(f"zip: {os.path.getsize(zip_path) / 1048576:.1f} MB, {runs} runs each")

class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=serve, **k)
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/calico-windows-v3.30.2.zip"

def timed(cmd, shell=False):
    """Runs one command in a fresh output dir: wall time and the peak RSS (KB) of the process."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    t = time.perf_counter()
    p = subprocess.Popen(cmd(out), shell=shell, cwd=out, env={"PATH": os.environ["PATH"]},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {cmd(out)}")
    return elapsed, usage.ru_maxrss

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
ma, mb = statistics.median(a), statistics.median(b)
print(f"calicoctl-win fetch release: median {ma:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in a)})")
print(f"curl + sha256sum + unzip:    median {mb:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in b)})")
print(f"ratio calicoctl-win / tools: {ma / mb:.2f}  (target <= 1.0)")
print(f"calicoctl-win peak RSS: {peak / 1024:.1f} MB  (target <= 60 MB)")
server.shutdown()
shutil.rmtree(work, ignore_errors=True)
PY
