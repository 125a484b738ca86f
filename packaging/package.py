#!/usr/bin/env python3
"""Lays out a calicoctl-win release from files already built: the zip, SHA256SUMS and the winget
manifest set. The same inputs give the same bytes: entries in a fixed order, every timestamp
the given date (the commit's, or SOURCE_DATE_EPOCH), fixed permissions, one compression level.

Usage: package.py --exe calicoctl-win.exe --completion calicoctl-win.ps1 --version 0.1.0
                  --date EPOCH --url-base https://host/path --out DIR

Writes into DIR:
  calicoctl-win-<version>-windows-amd64.zip   calicoctl-win.exe, LICENSE, README.md,
                                              calico-windows.yaml (the default config),
                                              calicoctl-win-completion.ps1
  SHA256SUMS                                  sha256sum's format
  winget/<version>/calicoctl-win.calicoctl-win{,.installer,.locale.en-US}.yaml
"""

import argparse
import hashlib
import os
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_ID = "calicoctl-win.calicoctl-win"
MANIFEST_VERSION = "1.9.0"


def zip_time(epoch):
    """A zip entry's time (DOS time, local to nothing: UTC), clamped to what zip can hold."""
    t = time.gmtime(max(epoch, 315532800))  # 1980-01-01, zip's first day
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def write_zip(path, entries, epoch):
    """entries: (name in the zip, file on disk, executable) in the order written."""
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as z:
        for name, source, executable in entries:
            info = zipfile.ZipInfo(name, date_time=zip_time(epoch))
            info.create_system = 3  # Unix, so that the mode below is read
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(source, "rb") as f:
                data = f.read()
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    os.replace(tmp, path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def yaml_text(value):
    """A YAML scalar: quoted, so no value can change the document's shape."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def winget(out, version, zip_name, digest, url_base, description, license_name):
    folder = os.path.join(out, "winget", version)
    os.makedirs(folder, exist_ok=True)
    head = (
        f"# Created by calicoctl-win's packaging/package.py\n"
        f"PackageIdentifier: {PACKAGE_ID}\n"
        f"PackageVersion: {yaml_text(version)}\n"
    )
    files = {
        f"{PACKAGE_ID}.yaml": head
        + "DefaultLocale: en-US\n"
        + "ManifestType: version\n"
        + f"ManifestVersion: {MANIFEST_VERSION}\n",
        f"{PACKAGE_ID}.installer.yaml": head
        + "InstallerType: zip\n"
        + "NestedInstallerType: portable\n"
        + "NestedInstallerFiles:\n"
        + "- RelativeFilePath: calicoctl-win.exe\n"
        + "  PortableCommandAlias: calicoctl-win\n"
        + "Installers:\n"
        + "- Architecture: x64\n"
        + f"  InstallerUrl: {yaml_text(url_base.rstrip('/') + '/' + zip_name)}\n"
        + f"  InstallerSha256: {digest.upper()}\n"
        + "ManifestType: installer\n"
        + f"ManifestVersion: {MANIFEST_VERSION}\n",
        f"{PACKAGE_ID}.locale.en-US.yaml": head
        + "PackageLocale: en-US\n"
        + "Publisher: calicoctl-win\n"
        + "PackageName: calicoctl-win\n"
        + f"License: {yaml_text(license_name)}\n"
        + f"ShortDescription: {yaml_text(description)}\n"
        + "Moniker: calicoctl-win\n"
        + "Tags:\n- calico\n- kubernetes\n- windows\n- networking\n"
        + "ManifestType: defaultLocale\n"
        + f"ManifestVersion: {MANIFEST_VERSION}\n",
    }
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", newline="\n") as f:
            f.write(text)
    return [os.path.join("winget", version, n) for n in files]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exe", required=True, help="the Windows executable to ship")
    p.add_argument("--completion", required=True, help="the PowerShell completion script")
    p.add_argument("--version", required=True)
    p.add_argument("--date", required=True, type=int, help="seconds since 1970 for every entry")
    p.add_argument("--url-base", required=True, help="where the zip will be published (for winget)")
    p.add_argument("--out", required=True)
    p.add_argument("--description", default="Installs, runs and maintains Calico networking on Windows Kubernetes nodes")
    p.add_argument("--license", default="Apache-2.0")
    a = p.parse_args()
    if not a.url_base.startswith("https://"):
        sys.exit("package.py: --url-base must be an https:// URL (winget downloads the zip from it)")
    for path in (a.exe, a.completion):
        if not os.path.isfile(path):
            sys.exit(f"package.py: {path} is not a file")
    os.makedirs(a.out, exist_ok=True)
    zip_name = f"calicoctl-win-{a.version}-windows-amd64.zip"
    entries = [
        ("calicoctl-win.exe", a.exe, True),
        ("LICENSE", os.path.join(ROOT, "LICENSE"), False),
        ("README.md", os.path.join(ROOT, "README.md"), False),
        ("calico-windows.yaml", os.path.join(ROOT, "templates", "calico-windows.yaml"), False),
        ("calicoctl-win-completion.ps1", a.completion, False),
    ]
    zip_path = os.path.join(a.out, zip_name)
    write_zip(zip_path, entries, a.date)
    digest = sha256(zip_path)
    with open(os.path.join(a.out, "SHA256SUMS"), "w", newline="\n") as f:
        f.write(f"{digest}  {zip_name}\n")
    manifests = winget(a.out, a.version, zip_name, digest, a.url_base, a.description, a.license)
    for name in [zip_name, "SHA256SUMS", *manifests]:
        print(os.path.join(a.out, name))


if __name__ == "__main__":
    main()
