#!/usr/bin/python3
"""The model benchmark: tessel (cpu target), ONNX Runtime and PyTorch eager, side by side, in one run.

For each model x batch x threads it times `tessel bench`, bench/peers/ort_bench.js and
bench/peers/torch_bench.py on the same inputs, checks tessel's and ONNX Runtime's outputs against
PyTorch's (max |a - b| / max |reference| per output, bar 1e-3), and writes the table, the machine
and the versions into docs/benchmarks.md between the model-benchmark markers. Raw results go to
bench/results/. Exit status 1 when a runtime failed or an output is off.

Called by bench/run_models.sh (which installs the peers, makes the models and builds tessel);
run it directly to skip those steps.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "peers"))
import peer_env  # noqa: E402

MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2_small"]
TOLERANCE = 1e-3
BEGIN_MARKER = "<!-- model-benchmark:begin (written by bench/run_models.sh) -->"
END_MARKER = "<!-- model-benchmark:end -->"
SECTION_TITLE = "## Models against ONNX Runtime and PyTorch"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_json(command, env=None, timeout=None):
    """Runs a benchmark command that prints one JSON line last; returns (result, error text)."""
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        errors = [line for line in lines if "error" in line.lower()]
        text = (errors or lines or [f"exit status {done.returncode}"])[0]
        return None, text[:300]
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line), None
    return None, "no JSON in the output"


def max_relative_error(out_dir, ref_dir, names):
    """max |out - ref| / max |ref| over each output (the worst one), or an error text."""
    worst = 0.0
    for name in names:
        path = os.path.join(out_dir, name + ".npy")
        if not os.path.exists(path):
            return None, f"output '{name}' not written"
        got = np.load(path).astype(np.float64)
        ref = np.load(os.path.join(ref_dir, name + ".npy")).astype(np.float64)
        if got.shape != ref.shape:
            return None, f"output '{name}' has shape {got.shape}, PyTorch's {ref.shape}"
        if not np.all(np.isfinite(got)):
            return None, f"output '{name}' has non-finite values"
        scale = max(float(np.max(np.abs(ref))), 1e-30)
        worst = max(worst, float(np.max(np.abs(got - ref))) / scale)
    return worst, None


def clean_env():
    env = dict(os.environ)
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(variable, None)
    return env


def bench_one(args, entry, threads, runs, warmup, profile):
    name, batch = entry["model"], entry["batch"]
    onnx = os.path.join(args.models_dir, entry["onnx"])
    inputs = os.path.join(args.models_dir, entry["dir"], "inputs")
    reference = os.path.join(args.models_dir, entry["dir"], "torch_outputs")
    out_base = os.path.join(args.results_dir, "outputs", f"{entry['dir']}_t{threads}")
    row = {"model": name, "batch": batch, "threads": threads, "runs": runs}
    timeout = args.timeout

    command = [args.tessel, "bench", onnx, "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
               "--inputs", inputs, "--outputs", os.path.join(out_base, "tessel"), "--json"]
    if profile:
        command.append("--profile")
    row["tessel"], row["tessel_error"] = run_json(command, env=dict(os.environ), timeout=timeout)

    command = ["node", os.path.join(BENCH, "peers", "ort_bench.js"), onnx, "--threads", str(threads), "--runs",
               str(runs), "--warmup", str(warmup), "--inputs", inputs, "--outputs", os.path.join(out_base, "ort")]
    row["ort"], row["ort_error"] = run_json(command, env=clean_env(), timeout=timeout)

    command = [sys.executable, os.path.join(BENCH, "peers", "torch_bench.py"), name, "--threads", str(threads),
               "--runs", str(runs), "--warmup", str(warmup), "--inputs", inputs,
               "--outputs", os.path.join(out_base, "torch")]
    row["torch"], row["torch_error"] = run_json(command, env=peer_env.peer_environment(threads), timeout=timeout)

    for runtime in ("tessel", "ort", "torch"):
        if row[runtime] is None:
            continue
        err, problem = max_relative_error(os.path.join(out_base, runtime), reference, entry["outputs"])
        row[f"{runtime}_rel_err"] = err
        if problem:
            row[f"{runtime}_error"] = problem
    return row


def ms(result):
    return result["median_ms"] if result else None


def fmt_ms(value):
    if value is None:
        return "error"
    return f"{value:.2f}" if value < 100 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def fmt_err(row, runtime):
    if row.get(f"{runtime}_error"):
        return "error"
    err = row.get(f"{runtime}_rel_err")
    if err is None:
        return "-"
    return f"{err:.1e}" + ("" if err <= TOLERANCE else " (over)")


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def row_ok(row):
    if any(row.get(f"{r}_error") for r in ("tessel", "ort", "torch")):
        return False
    return all(row.get(f"{r}_rel_err") is not None and row[f"{r}_rel_err"] <= TOLERANCE for r in ("tessel", "ort"))


# --- Machine and versions ------------------------------------------------------------------------

def command_output(command, env=None):
    try:
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine_info():
    lscpu = command_output(["lscpu"])
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("Flags", "").split())
    if "avx512f" in flags:
        isa = "AVX-512 (" + ", ".join(f for f in ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16")
                                      if f in flags) + ")"
    elif "avx2" in flags and "fma" in flags:
        isa = "AVX2 + FMA"
    else:
        isa = "SSE (no AVX2)"
    return {
        "cpu": fields.get("Model name", platform.processor() or "unknown"),
        "cpus": os.cpu_count(),
        "cores_per_socket": fields.get("Core(s) per socket", "?"),
        "threads_per_core": fields.get("Thread(s) per core", "?"),
        "isa": isa,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
        "kernel": platform.release(),
        "os": command_output(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
    }


def versions(tessel):
    def dpkg(package):
        return command_output(["dpkg-query", "-W", "-f=${Version}", package]) or "not installed"

    compiler = command_output(["c++", "--version"]).splitlines()
    build_type = "?"
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tessel))), "CMakeCache.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            found = re.search(r"^CMAKE_BUILD_TYPE:\w+=(\w*)", f.read(), re.M)
        build_type = found.group(1) if found else "?"
    git = command_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = command_output(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    ort_version = command_output(["node", "-p", "require('onnxruntime-node/package.json').version"],
                                 env=dict(os.environ, NODE_PATH=os.path.join(BENCH, "peers", "node_modules")))
    return {
        "tessel": (f"{git}{' (with uncommitted changes)' if dirty else ''}" if git else "unknown") +
                  f", binary {os.path.relpath(tessel, ROOT)} ({build_type})",
        "compiler": compiler[0] if compiler else "?",
        "onnxruntime-node": ort_version or "?",
        "node": command_output(["node", "--version"]),
        "python3-torch": dpkg("python3-torch"),
        "python3-torchvision": dpkg("python3-torchvision"),
        "torch BLAS": peer_env.blas_name(),
        "python3": platform.python_version(),
        "numpy": np.__version__,
    }


# --- docs/benchmarks.md --------------------------------------------------------------------------

def render(rows, machine, vers, manifest, profiles, started, load_before, load_after, selection):
    lines = []
    lines.append(f"Run of {started} ({selection}); load average {load_before} before, "
                 f"{load_after} after. Median latency in ms over the timed runs after warm-up; ratios below 1 "
                 f"mean tessel is faster. Output error is max |y - y_torch| / max |y_torch| over each output "
                 f"against PyTorch's outputs from `make_models.py` (bar {TOLERANCE:g}).")
    busiest = max(float(load_before), float(load_after))
    if busiest > 0.5 * (os.cpu_count() or 1):
        lines.append("")
        lines.append(f"**The machine was busy (load average up to {busiest:.1f} on {os.cpu_count()} CPUs): other "
                     f"processes competed for the cores, so these times are inflated and noisy, the 2-thread ones "
                     f"most. Rerun on an idle machine before drawing conclusions.**")
    lines.append("")
    lines.append("| model | batch | threads | tessel ms | ORT ms | PyTorch ms | tessel/ORT | tessel/PyTorch | "
                 "tessel err | ORT err | runs |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        t, o, p = ms(r["tessel"]), ms(r["ort"]), ms(r["torch"])
        lines.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {fmt_ms(t)} | {fmt_ms(o)} | {fmt_ms(p)} | "
                     f"{ratio(t, o)} | {ratio(t, p)} | {fmt_err(r, 'tessel')} | {fmt_err(r, 'ort')} | {r['runs']} |")
    errors = [(r, rt) for r in rows for rt in ("tessel", "ort", "torch") if r.get(f"{rt}_error")]
    if errors:
        lines.append("")
        lines.append("Errors:")
        for r, rt in errors:
            lines.append(f"- {r['model']} batch {r['batch']} threads {r['threads']}, {rt}: {r[rt + '_error']}")

    key_rows = [r for r in rows if r["batch"] == 1 and r["threads"] == 2]
    if key_rows:
        lines.append("")
        lines.append("Batch 1, 2 threads (the bar: at most 1.25x ONNX Runtime, faster than PyTorch eager):")
        lines.append("")
        for r in key_rows:
            t, o, p = ms(r["tessel"]), ms(r["ort"]), ms(r["torch"])
            if t is None or o is None or p is None:
                lines.append(f"- {r['model']}: incomplete")
                continue
            verdict = []
            verdict.append("faster than ONNX Runtime" if t < o else
                           "within 1.25x of ONNX Runtime" if t <= 1.25 * o else "slower than 1.25x ONNX Runtime")
            verdict.append("faster than PyTorch" if t < p else "not faster than PyTorch")
            lines.append(f"- {r['model']}: {t / o:.2f}x ORT, {t / p:.2f}x PyTorch: {', '.join(verdict)}")

    if profiles:
        lines.append("")
        lines.append("Where tessel's time goes (`tessel bench --profile`, batch 1, 2 threads; op types by share of "
                     "the summed step time, and the slowest single step):")
        lines.append("")
        for name, prof in profiles.items():
            by_op = prof.get("by_op", [])[:3]
            steps = prof.get("steps", [])
            ops = ", ".join(f"{o['op']} {o['percent']:.0f}% ({o['steps']} step{'s' if o['steps'] != 1 else ''})"
                            for o in by_op)
            slowest = (f"; slowest step {steps[0]['node']} ({steps[0]['op']}, {steps[0]['output']}, "
                       f"{steps[0]['kernel']}) {steps[0]['percent']:.0f}%") if steps else ""
            lines.append(f"- {name}: {ops}{slowest}")

    lines.append("")
    lines.append(f"Machine: {machine['cpu']}, {machine['cpus']} CPUs ({machine['cores_per_socket']} cores per socket, "
                 f"{machine['threads_per_core']} threads per core), {machine['isa']}, {machine['memory_gib']} GiB, "
                 f"{machine['os']}, Linux {machine['kernel']}.")
    lines.append("")
    lines.append("Versions: " + "; ".join(f"{k} {v}" for k, v in vers.items()) + ".")
    exports = [e for e in manifest.get("entries", {}).values()]
    if exports:
        lines.append("")
        lines.append("Models (`bench/make_models.py`, opset {}, random weights, seeds {}/{}): ".format(
            manifest.get("opset"), manifest.get("model_seed"), manifest.get("input_seed")) +
            ", ".join(f"{e['dir']} {e['onnx_mb']:.0f} MiB" for e in sorted(exports, key=lambda e: e["dir"])) + ".")
    return "\n".join(lines)


def write_doc(path, body):
    with open(path) as f:
        text = f.read()
    block = f"{BEGIN_MARKER}\n{body}\n{END_MARKER}"
    if BEGIN_MARKER in text and END_MARKER in text:
        start = text.index(BEGIN_MARKER)
        end = text.index(END_MARKER) + len(END_MARKER)
        text = text[:start] + block + text[end:]
    else:
        text = text.rstrip("\n") + f"\n\n{SECTION_TITLE}\n\n{block}\n"
    with open(path, "w") as f:
        f.write(text)


def load_average():
    return "{:.1f}".format(os.getloadavg()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build-release", "bin", "tessel"))
    parser.add_argument("--models-dir", default=os.path.join(BENCH, "models"))
    parser.add_argument("--results-dir", default=os.path.join(BENCH, "results"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=0, help="timed runs per case (default 20 at batch 1, 8 above)")
    parser.add_argument("--warmup", type=int, default=0, help="warm-up runs (default 3 at batch 1, 2 above)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per runtime and case")
    parser.add_argument("--quick", action="store_true", help="ResNet-50, batch 1, both thread counts, 5 runs")
    parser.add_argument("--no-profile", action="store_true", help="skip tessel's per-op profile at batch 1, 2 threads")
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--no-doc", action="store_true", help="print the table instead of writing the doc")
    args = parser.parse_args()
    if args.quick:
        args.models, args.batches = "resnet50", "1"
        args.runs, args.warmup = args.runs or 5, args.warmup or 1

    with open(os.path.join(args.models_dir, "manifest.json")) as f:
        manifest = json.load(f)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = load_average()
    os.makedirs(args.results_dir, exist_ok=True)

    rows, profiles = [], {}
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            entry = manifest["entries"].get(f"{name}_b{batch}")
            if entry is None:
                sys.exit(f"run_models: {name} batch {batch} is not in {args.models_dir}; run bench/make_models.py")
            for threads in (int(t) for t in args.threads.split(",")):
                runs = args.runs or (20 if batch == 1 else 8)
                warmup = args.warmup or (3 if batch == 1 else 2)
                profile = not args.no_profile and batch == 1 and threads == 2
                log(f"{name} batch {batch} threads {threads} ({runs} runs)")
                row = bench_one(args, entry, threads, runs, warmup, profile)
                rows.append(row)
                if profile and row["tessel"] and "profile" in row["tessel"]:
                    profiles[name] = row["tessel"]["profile"]
                log("  tessel {} ms ({}), ORT {} ms ({}), PyTorch {} ms ({})".format(
                    fmt_ms(ms(row["tessel"])), row.get("tessel_error") or fmt_err(row, "tessel"),
                    fmt_ms(ms(row["ort"])), row.get("ort_error") or fmt_err(row, "ort"),
                    fmt_ms(ms(row["torch"])), row.get("torch_error") or fmt_err(row, "torch")))

    machine, vers = machine_info(), versions(args.tessel)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.results_dir, f"models-{stamp}.json"), "w") as f:
        json.dump({"started": started, "machine": machine, "versions": vers, "rows": rows}, f, indent=1)
    selection = "--quick" if args.quick else f"models {args.models}; batches {args.batches}; threads {args.threads}"
    body = render(rows, machine, vers, manifest, profiles, started, load_before, load_average(), selection)
    if args.no_doc:
        print(body)
    else:
        write_doc(args.doc, body)
        log(f"wrote the table to {os.path.relpath(args.doc, ROOT)}")
    return 0 if all(row_ok(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
