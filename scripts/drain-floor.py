#!/usr/bin/env python3
"""The floor of the drain benchmark (benches/drain.rs): the API requests a drain needs and
nothing else, issued by a minimal client with calicoctl-win's concurrency against the same
server. It cordons the node, lists its pods, evicts those a drain evicts (not DaemonSet or
mirror pods) with at most CONCURRENCY requests in flight, waits until the evicted pods are gone
(listing the node's pods with calicoctl-win's backoff: 50 ms, doubling to 1 s), and uncordons
the node. The evictions go through `curl --parallel --parallel-max CONCURRENCY` (C, its
connections kept alive and reused), the four other requests through one kept-alive connection
of Python's: Python's own per-request cost would otherwise make this slower than the client it
is the floor of. Prints the seconds from its first request to its last; process start and
imports are not counted.

Usage: drain-floor.py SERVER_URL CA_FILE TOKEN NODE CONCURRENCY
"""
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

url, ca, token, node, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
server = urllib.parse.urlsplit(url)
tls = ssl.create_default_context(cafile=ca)
local = threading.local()


def call(method, path, body=None, content_type="application/json"):
    """One request on this thread's kept-alive connection (opened again once if it broke)."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = content_type
    for attempt in range(2):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPSConnection(
                server.hostname, server.port, context=tls, timeout=15)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            local.conn = None
            if attempt:
                raise
            continue
        if resp.status >= 300:
            sys.exit(f"{method} {path}: {resp.status} {payload[:200]!r}")
        return json.loads(payload) if payload else None


def cordon(on):
    call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True if on else None}},
         "application/merge-patch+json")


def pods_on_node():
    selector = urllib.parse.quote(f"spec.nodeName={node}")
    return call("GET", f"/api/v1/pods?fieldSelector={selector}")["items"]


def evicted_by_drain(pod):
    meta = pod["metadata"]
    if "kubernetes.io/config.mirror" in meta.get("annotations", {}):
        return False
    return not any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences", []))


def evict_all(pods):
    """All evictions in one `curl --parallel`, each with its own body (`next` separates them)."""
    blocks = []
    for pod in pods:
        meta = pod["metadata"]
        body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": meta["name"], "namespace": meta["namespace"]}})
        blocks.append("\n".join([
            f'url = "{url}/api/v1/namespaces/{meta["namespace"]}/pods/{meta["name"]}/eviction"',
            f'cacert = "{ca}"',
            f'header = "Authorization: Bearer {token}"',
            'header = "Content-Type: application/json"',
            f"data = {json.dumps(body)}",
            "output = /dev/null",
            "fail",
            "silent",
            "show-error",
        ]))
    with tempfile.NamedTemporaryFile("w", suffix=".curlrc", delete=False) as f:
        f.write("\nnext\n".join(blocks) + "\n")
    try:
        subprocess.run(["curl", "--parallel", "--parallel-immediate", "--parallel-max", str(concurrency),
                        "-K", f.name],
                       check=True)
    finally:
        os.unlink(f.name)


started = time.perf_counter()
cordon(True)
pods = [p for p in pods_on_node() if evicted_by_drain(p)]
evict_all(pods)
evicted = {p["metadata"]["uid"] for p in pods}
pause = 0.05
while any(p["metadata"]["uid"] in evicted for p in pods_on_node()):
    time.sleep(pause)
    pause = min(pause * 2, 1.0)
cordon(False)
print(f"{time.perf_counter() - started:.4f}")
