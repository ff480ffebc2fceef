#!/usr/bin/python3
"""Makes a Llama-style decoder with a KV cache, exported as the ecosystem exports them, and
PyTorch's greedy generation from it. Random weights (fixed seeds); nothing is downloaded.

The decoder (plain PyTorch): token embedding, per layer RMSNorm -> grouped-query attention with
rotary position embeddings over the past and new keys/values -> residual -> RMSNorm -> SwiGLU MLP
-> residual, a final RMSNorm and an untied LM head. ONNX inputs `input_ids` [batch, sequence],
`attention_mask` [batch, total] (1 = attend), `position_ids` [batch, sequence] and
`past_key_values.N.key` / `.value` [batch, kv_heads, past, head_dim]; outputs `logits`
[batch, sequence, vocabulary] and `present.N.key` / `.value` [batch, kv_heads, total, head_dim];
batch, sequence, past and total are symbolic. The prompt is a prefill with an empty cache (past 0).

Two sizes (--size): `small` (2 layers, hidden 256; the tests') and `1b`, the published shape of a
1B-class Llama (16 layers, hidden 2048, 32 query and 8 KV heads, MLP 8192, vocabulary 128256;
1.5e9 parameters, 6 GB in fp32), whose weights go to one external data file beside the graph.

Layout of OUT_DIR (default bench/models/), NAME llama_small or llama_1b:
  NAME.onnx
  NAME.onnx.data               1b only: the weights (ONNX external data)
  NAME/prompt.npy              int64 [1, PROMPT] seeded prompt ids
  NAME/torch_greedy.npy        int64 [1, NEW] PyTorch's greedy continuation of it

Usage: bench/make_llm.py [OUT_DIR] [--size small|1b] [--layers L] [--prompt-len 32] [--new-tokens 64]
`tessel generate OUT_DIR/NAME.onnx --prompt OUT_DIR/NAME/prompt.npy` prints the same ids.
"""
import argparse
import os
import tempfile

import numpy as np
import onnx
import torch
from torch import nn

MODEL_SEED = 0
PROMPT_SEED = 1
OPSET = 17


class SmallConfig:
    name = "llama_small"
    vocab = 512
    hidden = 256
    layers = 2
    heads = 8
    kv_heads = 2
    mlp = 688
    eps = 1e-5
    rope_theta = 10000.0


class OneBConfig:
    """The shape of Llama 3.2 1B, with an untied LM head."""
    name = "llama_1b"
    vocab = 128256
    hidden = 2048
    layers = 16
    heads = 32
    kv_heads = 8
    mlp = 8192
    eps = 1e-5
    rope_theta = 500000.0


SIZES = {"small": SmallConfig, "1b": OneBConfig}


class Linear(nn.Module):
    """y = x @ weight with the weight stored [in, out], as the exported MatMul reads it: nn.Linear's
    [out, in] weight would be transposed into a second copy of every weight during export (6 GB at 1b)."""

    def __init__(self, size_in, size_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(size_in, size_out))

    def forward(self, x):
        return x @ self.weight


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate(x, positions, theta):
    """Rotary embeddings, the half-split form: x [b, heads, t, d] at positions [b, t]."""
    d = x.shape[-1]
    inverse = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = positions[:, None, :, None].float() * inverse
    cos, sin = torch.cat([angles.cos(), angles.cos()], -1), torch.cat([angles.sin(), angles.sin()], -1)
    first, second = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-second, first], -1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        head = c.hidden // c.heads
        self.input_norm = RMSNorm(c.hidden, c.eps)
        self.post_attention_norm = RMSNorm(c.hidden, c.eps)
        self.q = Linear(c.hidden, c.heads * head)
        self.k = Linear(c.hidden, c.kv_heads * head)
        self.v = Linear(c.hidden, c.kv_heads * head)
        self.o = Linear(c.heads * head, c.hidden)
        self.gate = Linear(c.hidden, c.mlp)
        self.up = Linear(c.hidden, c.mlp)
        self.down = Linear(c.mlp, c.hidden)

    def forward(self, x, positions, mask, past_key, past_value):
        c = self.c
        b, t, _ = x.shape
        head = c.hidden // c.heads
        h = self.input_norm(x)
        q = self.q(h).view(b, t, c.heads, head).transpose(1, 2)
        k = self.k(h).view(b, t, c.kv_heads, head).transpose(1, 2)
        v = self.v(h).view(b, t, c.kv_heads, head).transpose(1, 2)
        q, k = rotate(q, positions, c.rope_theta), rotate(k, positions, c.rope_theta)
        k, v = torch.cat([past_key, k], 2), torch.cat([past_value, v], 2)
        # Each KV head serves heads / kv_heads query heads (expand + reshape: repeat_interleave
        # exports with wrong dims under dynamic axes in torch 1.13).
        total, group = k.shape[2], c.heads // c.kv_heads
        keys = k[:, :, None].expand(b, c.kv_heads, group, total, head).reshape(b, c.heads, total, head)
        values = v[:, :, None].expand(b, c.kv_heads, group, total, head).reshape(b, c.heads, total, head)
        attention = torch.softmax(q @ keys.transpose(-1, -2) / head ** 0.5 + mask, -1) @ values
        x = x + self.o(attention.transpose(1, 2).reshape(b, t, c.hidden))
        h = self.post_attention_norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h)), k, v


class LlamaDecoder(nn.Module):
    def __init__(self, c=SmallConfig):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.layers)])
        self.norm = RMSNorm(c.hidden, c.eps)
        self.lm_head = Linear(c.hidden, c.vocab)
        generator = torch.Generator().manual_seed(MODEL_SEED)
        for module in self.modules():
            # Drawn in nn.Linear's [out, in] order, one matrix at a time, so a size's weights do not
            # depend on how they are stored.
            if isinstance(module, Linear):
                module.weight.data.copy_(torch.empty(module.weight.shape[::-1]).normal_(0.0, 0.05, generator=generator).t())
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(0.0, 0.05, generator=generator)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        t, total = input_ids.shape[1], attention_mask.shape[1]
        # Causal over the past and new positions, and no attention to masked ones: [b, 1, t, total].
        query = torch.arange(t)[:, None] + (total - t)
        key = torch.arange(total)[None, :]
        keep = (key <= query)[None, None] & (attention_mask[:, None, None, :] > 0)
        mask = torch.where(keep, torch.zeros((), dtype=torch.float32), torch.full((), torch.finfo(torch.float32).min))
        x = self.embed(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, position_ids, mask, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (self.lm_head(self.norm(x)), *presents)


def io_names(c):
    past = [f"past_key_values.{i}.{kv}" for i in range(c.layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(c.layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids"] + past, ["logits"] + present


def empty_cache(c, batch):
    head = c.hidden // c.heads
    return [torch.zeros(batch, c.kv_heads, 0, head) for _ in range(2 * c.layers)]


def export(model, path):
    c = model.c
    inputs, outputs = io_names(c)
    ids = torch.zeros(1, 4, dtype=torch.long)
    example = (ids, torch.ones(1, 4, dtype=torch.long), torch.arange(4)[None], *empty_cache(c, 1))
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past"} for n in inputs[3:]})
    axes.update({n: {0: "batch", 2: "total"} for n in outputs[1:]})
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(path))) as scratch:
        # Past 2 GB torch writes each weight to a file of its own beside the graph; they are gathered
        # into one data file, a tensor at a time.
        exported = os.path.join(scratch, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, example, exported, opset_version=OPSET, input_names=inputs, output_names=outputs,
                              dynamic_axes=axes)
        graph = onnx.load(exported, load_external_data=False)
        external = [t for t in graph.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        if external:
            data_name = os.path.basename(path) + ".data"
            with open(os.path.join(os.path.dirname(os.path.abspath(path)), data_name), "wb") as data:
                for tensor in external:
                    info = {entry.key: entry.value for entry in tensor.external_data}
                    with open(os.path.join(scratch, info["location"]), "rb") as f:
                        f.seek(int(info.get("offset", 0)))
                        blob = f.read(int(info["length"])) if "length" in info else f.read()
                    offset = data.tell()
                    data.write(blob)
                    data.write(b"\0" * (-data.tell() % 64))  # Each tensor 64-byte aligned in the file.
                    del tensor.external_data[:]
                    for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(len(blob)))):
                        entry = tensor.external_data.add()
                        entry.key, entry.value = key, value
        onnx.save(graph, path)


def greedy(model, prompt, new_tokens):
    """PyTorch's greedy continuation of `prompt` [batch, length], the cache fed back each step."""
    past, ids, cached, out = empty_cache(model.c, prompt.shape[0]), prompt, 0, []
    with torch.no_grad():
        for _ in range(new_tokens):
            t = ids.shape[1]
            logits, *past = model(ids, torch.ones(ids.shape[0], cached + t, dtype=torch.long),
                                  torch.arange(cached, cached + t)[None].expand(ids.shape[0], t), *past)
            cached += t
            ids = logits[:, -1].argmax(-1, keepdim=True)
            out.append(ids)
    return torch.cat(out, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--layers", type=int, help="decoder layers instead of the size's (NAME gets _LN): "
                        "one layer of the 1b shape for compiler and kernel studies")
    args = parser.parse_args()
    c = SIZES[args.size]
    if args.layers:
        c = type(c.__name__, (c,), {"layers": args.layers, "name": f"{c.name}_l{args.layers}"})
    model = LlamaDecoder(c).eval()
    os.makedirs(os.path.join(args.out_dir, c.name), exist_ok=True)
    path = os.path.join(args.out_dir, c.name + ".onnx")
    export(model, path)
    prompt = torch.from_numpy(np.random.default_rng(PROMPT_SEED).integers(0, c.vocab, (1, args.prompt_len)))
    np.save(os.path.join(args.out_dir, c.name, "prompt.npy"), prompt.numpy())
    np.save(os.path.join(args.out_dir, c.name, "torch_greedy.npy"), greedy(model, prompt, args.new_tokens).numpy())
    print(f"wrote {path} and its prompt and PyTorch greedy ids")


if __name__ == "__main__":
    main()
