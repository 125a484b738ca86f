#!/usr/bin/env bash
# Benchmark: `calicoctl-win fetch release` (download + verify + extract) against what it cannot
# beat, on two ~100 MB release zips served by a local HTTP server:
#   - "compressible": Calico's layout, its executables deflating to about 45% (Python zipfile);
#   - "go-binaries": real Go executables (kubectl as calico-node.exe, etcd as both CNI plugins,
#     about 100 MB), packed with Info-ZIP `zip -r` as Calico's node/Makefile packs its release.
# At a paced link (100 and 400 Mbit/s) it prints fetch / pure download (`curl -o /dev/null` of the
# same URL from the same server); goal <= 1.03. On unlimited loopback it prints fetch /
# (curl + sha256sum + unzip run one after the other), goal <= 0.30 at load below 1.5, beside the
# floor no run can beat: one thread inflating the largest entry (`cargo bench --bench inflate`).
# Runs are interleaved (fetch, then the comparison, RUNS times); each figure is a median; the
# load average is read before and after; fetch's peak RSS is measured by GNU time (%M), goal
# <= 20 MB. The first fetch of each zip is checked file by file against unzip's extraction.
# Usage: scripts/bench-fetch.sh [RUNS]   (default 3; needs curl, sha256sum, unzip, zip, python3,
#        GNU time, kubectl and etcd: apt-get install -y curl unzip zip time etcd-server kubectl)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
for tool in curl sha256sum unzip zip python3 /usr/bin/time kubectl etcd; do
    command -v "$tool" >/dev/null || { echo "bench-fetch: $tool is needed (see the usage line of $0)" >&2; exit 1; }
done
cargo build --release --quiet
# The floor's executable, built before anything is timed.
floor="$(cargo bench --quiet --bench inflate --no-run --message-format=json \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m["target"]["name"] == "inflate":
        print(m["executable"])')"
exec python3 - "$RUNS" "$(command -v kubectl)" "$(command -v etcd)" "$floor" <<'PY'
import atexit, hashlib, http.server, os, random, shutil, statistics, subprocess, sys, tempfile, threading, time, zipfile

runs, kubectl, etcd = int(sys.argv[1]), os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
floor_exe = sys.argv[4]
exe = os.path.abspath("target/release/calicoctl-win")
work = tempfile.mkdtemp(prefix="calicoctl-win-bench-fetch-")
atexit.register(shutil.rmtree, work, ignore_errors=True)
serve = os.path.join(work, "serve")
os.makedirs(serve)
mb = 1024 * 1024

def compressible(path):
    # calico-node.exe about two thirds, the CNI plugins the rest; each block a third random
    # bytes and two thirds words from a small vocabulary, which deflates as Go executables do.
    rng = random.Random(7)
    words = [os.urandom(16) for _ in range(256)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for name, share in [("calico-node.exe", 0.64), ("cni/calico.exe", 0.18), ("cni/calico-ipam.exe", 0.18)]:
            with z.open("CalicoWindows/" + name, "w", force_zip64=True) as f:
                for _ in range(int(100 * share * mb) // 65536):
                    f.write(os.urandom(22 * 1024) + b"".join(rng.choices(words, k=2688)))
        z.writestr("CalicoWindows/cni.conf.template", "{}\n")

def go_binaries(path):
    # As node/Makefile packs it at v3.31.0 (line 609): `zip -r "../$(WINDOWS_ARCHIVE)" CalicoWindows`.
    tree = os.path.join(work, "tree")
    root = os.path.join(tree, "CalicoWindows")
    os.makedirs(os.path.join(root, "cni"))
    shutil.copy(kubectl, os.path.join(root, "calico-node.exe"))
    shutil.copy(etcd, os.path.join(root, "cni", "calico.exe"))
    shutil.copy(etcd, os.path.join(root, "cni", "calico-ipam.exe"))
    with open(os.path.join(root, "cni.conf.template"), "w") as f:
        f.write("{}\n")
    subprocess.run(["zip", "-q", "-r", path, "CalicoWindows"], cwd=tree, check=True)

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(mb), b""):
            h.update(block)
    return h.hexdigest()

zips = {}
for kind, make in [("compressible", compressible), ("go-binaries", go_binaries)]:
    path = os.path.join(serve, f"{kind}", "calico-windows-v3.30.2.zip")
    os.makedirs(os.path.dirname(path))
    make(path)
    expanded = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    zips[kind] = (path, sha256(path))
    print(f"{kind}: {os.path.getsize(path) / mb:.1f} MB zip expanding to {expanded / mb:.1f} MB")

class Paced(http.server.BaseHTTPRequestHandler):
    """Sends a file at `server.rate` bytes/s (None: as fast as the socket takes it)."""
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        path = os.path.join(serve, self.path.lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        size = os.path.getsize(path)
        self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(size))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        rate = self.server.rate
        with open(path, "rb") as f:
            if rate is None:
                self.connection.sendfile(f)
                return
            start, sent = time.monotonic(), 0
            while chunk := f.read(64 * 1024):
                wait = start + sent / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self.connection.sendall(chunk)
                sent += len(chunk)
    def log_message(self, *a):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Paced)
server.rate = None
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}"

rss_file = os.path.join(work, "rss")
def timed(argv):
    """Runs one command in a fresh output dir: wall time and peak RSS in KiB (GNU time)."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    argv = ["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv(out)
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=out, env={"PATH": os.environ["PATH"]},
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr.decode()}")
    with open(rss_file) as f:
        return elapsed, int(f.read().split()[-1]), out

def fetch(kind):
    url, sha = f"{base}/{kind}/calico-windows-v3.30.2.zip", zips[kind][1]
    return lambda out: [exe, "fetch", "release", "--release-zip", url, "--sha256", sha,
                        "--allow-http", "--output-dir", out]
def download(kind):
    return lambda out: ["curl", "-sSf", "-o", "/dev/null", f"{base}/{kind}/calico-windows-v3.30.2.zip"]
def tools(kind):
    url, sha = f"{base}/{kind}/calico-windows-v3.30.2.zip", zips[kind][1]
    return lambda out: ["sh", "-c", f"curl -sSf -o calico.zip {url} && echo '{sha}  calico.zip'"
                        f" | sha256sum -c --quiet && unzip -q calico.zip -d ."]

def tree(d):
    return {os.path.relpath(os.path.join(r, f), d): sha256(os.path.join(r, f))
            for r, _, fs in os.walk(d) for f in fs if not f.endswith(".zip")}

# The first fetch of each zip must extract exactly what unzip extracts.
for kind in zips:
    _, _, out = timed(tools(kind))
    want = tree(out)
    _, _, out = timed(fetch(kind))
    if tree(out) != want:
        sys.exit(f"{kind}: fetch release extracted other files than unzip")

def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])

def compare(kind, theirs):
    ours_t, their_t, peak = [], [], 0
    for _ in range(runs):
        t, rss, _ = timed(fetch(kind))
        ours_t.append(t)
        peak = max(peak, rss)
        their_t.append(timed(theirs(kind))[0])
    return statistics.median(ours_t), statistics.median(their_t), peak, ours_t, their_t

def row(label, kind, theirs_label, r, goal, before, after):
    ours, theirs, peak, a, b = r
    print(f"{label:<15} {kind:<13} fetch {ours:7.3f} s  {theirs_label} {theirs:7.3f} s  "
          f"ratio {ours / theirs:.3f} (goal {goal})  peak RSS {peak / 1024:.1f} MiB  "
          f"load {before:.2f}->{after:.2f}")
    print(f"{'':15} {'':13} runs: fetch {', '.join(f'{x:.3f}' for x in a)}; "
          f"{theirs_label} {', '.join(f'{x:.3f}' for x in b)}")

print(f"{runs} runs each, interleaved; ratio = median of fetch / median of the comparison")
for mbit in (100, 400):
    server.rate = mbit * 1_000_000 / 8
    for kind in zips:
        before = load()
        r = compare(kind, download)
        row(f"{mbit} Mbit/s", kind, "download", r, "<= 1.03", before, load())

server.rate = None
floors = {}
p = subprocess.run([floor_exe, "--bench"] + [zips[k][0] for k in zips],
                   stdout=subprocess.PIPE, text=True, check=True)
for line in p.stdout.splitlines():
    path, entry, secs = line.split("\t")
    floors[path] = (entry, float(secs))
for kind in zips:
    before = load()
    r = compare(kind, tools)
    row("loopback", kind, "curl+sha256sum+unzip", r, "<= 0.30 at load < 1.5", before, load())
    entry, secs = floors[zips[kind][0]]
    print(f"{'':15} {'':13} floor: one thread inflates {entry} in {secs:.3f} s = "
          f"{secs / r[1]:.3f} of curl+sha256sum+unzip")
server.shutdown()
PY
