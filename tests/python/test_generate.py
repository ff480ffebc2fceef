"""`tessel generate` on a Llama-style decoder with a KV cache (bench/make_llm.py: RMSNorm, rotary
embeddings, grouped-query attention over the past and new keys, SwiGLU, untied LM head; exported
with past_key_values in and presents out): greedy generation of 64 tokens from a 32-token prompt
equals PyTorch's, token for token, on each target."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

sys.path.insert(0, str(ROOT / "bench"))
import make_llm  # noqa: E402


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm")
    model = make_llm.LlamaDecoder().eval()
    path = out / "llama_small.onnx"
    make_llm.export(model, str(path))
    prompt = torch.from_numpy(np.random.default_rng(7).integers(0, make_llm.SmallConfig.vocab, (1, 32)))
    np.save(out / "prompt.npy", prompt.numpy())
    return path, out / "prompt.npy", make_llm.greedy(model, prompt, 64).numpy()


# The default feeds the cache in buffers padded to powers of two (32 prompt positions + 64 new:
# capacities 64 and 128), `--exact-cache` at its exact length (63 decode shapes).
# On an accelerator the cache is written in place on the device unless --cache-on-host.
@pytest.mark.parametrize("target,flags", [("cpu", []), ("cpu", ["--exact-cache"]), ("nc-v2", []),
                                          ("nc-v2", ["--cores", "2"]), ("nc-v2", ["--cache-on-host"]),
                                          ("nc-v3", [])])
def test_greedy_generation_equals_pytorch(cli, decoder, tmp_path, target, flags):
    model, prompt, want = decoder
    ids = tmp_path / "ids.npy"
    result = subprocess.run([str(cli), "generate", str(model), "--prompt", str(prompt), "--max-new-tokens", "64",
                             "--target", target, "-o", str(ids)] + flags, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(ids), want)
    assert "time to first token" in result.stdout and "tokens/s" in result.stdout
    shapes = "63 shapes (capacity 32..94)" if flags == ["--exact-cache"] else "2 shapes (capacity 64, 128)"
    assert f"decode runs at {shapes}" in result.stdout
    in_place = target != "cpu" and "--cache-on-host" not in flags
    assert ("written in place on the device" in result.stdout) == in_place
    if target != "cpu":
        assert "simulated: first token" in result.stdout
        assert "simulated decode step, medians: device" in result.stdout


def test_generate_names_what_a_decoder_lacks(cli, tmp_path):
    from conftest import identity_model

    path = tmp_path / "identity.onnx"
    path.write_bytes(identity_model().SerializeToString())
    result = subprocess.run([str(cli), "generate", str(path), "--prompt-len", "4"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "input 'x': a decoder for generate takes input_ids" in result.stderr


def test_timing_only_generation_simulates_each_step_without_ids(cli, decoder, tmp_path):
    model, prompt, _ = decoder
    args = [str(cli), "generate", str(model), "--prompt", str(prompt), "--max-new-tokens", "40", "--target", "nc-v2"]
    result = subprocess.run(args + ["--timing-only"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "generated: nothing (timing only" in result.stdout
    assert "decode runs at 2 shapes (capacity 64, 128)" in result.stdout
    assert "host stages not run (timing only)" in result.stdout
    assert "time to first token" not in result.stdout  # The host's time is the simulator's.
    refused = subprocess.run(args + ["--timing-only", "-o", str(tmp_path / "ids.npy")], capture_output=True, text=True)
    assert refused.returncode != 0
    assert "--timing-only generates no ids to write (-o)" in refused.stderr
