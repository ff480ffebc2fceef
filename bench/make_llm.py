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

Layout of OUT_DIR (default bench/models/):
  llama_small.onnx
  llama_small/prompt.npy         int64 [1, PROMPT] seeded prompt ids
  llama_small/torch_greedy.npy   int64 [1, NEW] PyTorch's greedy continuation of it

Usage: bench/make_llm.py [OUT_DIR] [--prompt-len 32] [--new-tokens 64]
`tessel generate OUT_DIR/llama_small.onnx --prompt OUT_DIR/llama_small/prompt.npy` prints the same ids.
"""
import argparse
import os

import numpy as np
import torch
from torch import nn

MODEL_SEED = 0
PROMPT_SEED = 1
OPSET = 17


class SmallConfig:
    vocab = 512
    hidden = 256
    layers = 2
    heads = 8
    kv_heads = 2
    mlp = 688
    eps = 1e-5
    rope_theta = 10000.0


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
        self.q = nn.Linear(c.hidden, c.heads * head, bias=False)
        self.k = nn.Linear(c.hidden, c.kv_heads * head, bias=False)
        self.v = nn.Linear(c.hidden, c.kv_heads * head, bias=False)
        self.o = nn.Linear(c.heads * head, c.hidden, bias=False)
        self.gate = nn.Linear(c.hidden, c.mlp, bias=False)
        self.up = nn.Linear(c.hidden, c.mlp, bias=False)
        self.down = nn.Linear(c.mlp, c.hidden, bias=False)

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
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        generator = torch.Generator().manual_seed(MODEL_SEED)
        for p in self.parameters():
            if p.dim() > 1:
                p.data.normal_(0.0, 0.05, generator=generator)

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
    with torch.no_grad():
        torch.onnx.export(model, example, path, opset_version=OPSET, input_names=inputs, output_names=outputs,
                          dynamic_axes=axes)


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
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()
    model = LlamaDecoder().eval()
    os.makedirs(os.path.join(args.out_dir, "llama_small"), exist_ok=True)
    export(model, os.path.join(args.out_dir, "llama_small.onnx"))
    prompt = torch.from_numpy(np.random.default_rng(PROMPT_SEED).integers(0, SmallConfig.vocab, (1, args.prompt_len)))
    np.save(os.path.join(args.out_dir, "llama_small", "prompt.npy"), prompt.numpy())
    np.save(os.path.join(args.out_dir, "llama_small", "torch_greedy.npy"), greedy(model, prompt, args.new_tokens).numpy())
    print(f"wrote {os.path.join(args.out_dir, 'llama_small.onnx')} and its prompt and PyTorch greedy ids")


if __name__ == "__main__":
    main()
