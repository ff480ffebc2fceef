#!/usr/bin/python3
"""Makes the benchmark models: ONNX files with random weights (fixed seeds), their inputs, and
PyTorch's outputs for the comparison. Nothing is downloaded.

Models (static shapes, one file per batch size, opset 17, constant-folded at export):
  resnet50, mobilenet_v2, vit_b_16   torchvision, weights=None, 224x224 images
  bert_base                          BERT-base encoder (HF BertModel architecture, no pooler),
                                     sequence 128; output last_hidden_state
  gpt2_small                         GPT-2-small decoder (HF GPT2Model architecture), sequence 128;
                                     output the last hidden state after the final LayerNorm (no LM
                                     head, so the comparison covers the decoder body)
  bert_base_dyn, resnet50_dyn,       the same modules exported with symbolic dims (BERT: batch and
  mobilenet_v2_dyn                   sequence; the CNNs: batch, height and width), so the graph
                                     keeps its shape computations (Shape -> Gather -> Concat ->
                                     Reshape); the files hold the batch-B example's inputs.
                                     bench/dynamic_shapes.py makes inputs for other shapes.

Layout of OUT_DIR (default bench/models/):
  NAME_bB.onnx
  NAME_bB/inputs/INPUT.npy          named after the ONNX graph inputs
  NAME_bB/torch_outputs/OUTPUT.npy  PyTorch eager on the same module, named after the graph outputs
  manifest.json                     models, inputs, outputs, versions and export times

Usage: bench/make_models.py [OUT_DIR] [--models a,b] [--batches 1,8] [--force]
torch_bench.py rebuilds the same modules through build_model(), so both see identical weights.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import peer_env  # noqa: E402

if __name__ == "__main__":
    # PyTorch computes the reference outputs; give it the benchmark's BLAS (see peer_env.py).
    peer_env.reexec_in_peer_environment(os.cpu_count() or 1)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

SEQUENCE = 128
IMAGE = 224
MODEL_SEED = 0
INPUT_SEED = 1234
OPSET = 17
ALL_MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2_small"]
# Variants with symbolic dims: NAME_dyn is NAME exported with these dims of each input symbolic.
DYNAMIC_AXES = {
    "bert_base": {0: "batch", 1: "sequence"},
    "resnet50": {0: "batch", 2: "height", 3: "width"},
    "mobilenet_v2": {0: "batch", 2: "height", 3: "width"},
}
DYNAMIC_MODELS = [name + "_dyn" for name in DYNAMIC_AXES]
# Bumped when a model's definition, weights or inputs change, so existing exports are redone.
RECIPES = {"resnet50": 1, "mobilenet_v2": 1, "vit_b_16": 2, "bert_base": 1, "gpt2_small": 1,
           "bert_base_dyn": 1, "resnet50_dyn": 1, "mobilenet_v2_dyn": 1}


def base_model(name):
    """The module a model name exports: NAME_dyn is NAME with symbolic dims."""
    return name[:-len("_dyn")] if name.endswith("_dyn") else name


# --- BERT-base (HF BertModel, absolute positions, eval mode: dropout is identity) -------------

class BertConfig:
    vocab_size = 30522
    hidden = 768
    layers = 12
    heads = 12
    intermediate = 3072
    max_positions = 512
    type_vocab_size = 2
    layer_norm_eps = 1e-12


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.head_size = c.hidden // c.heads
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, additive_mask):
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        b, s = context.shape[0], context.shape[1]
        return context.view(b, s, self.heads * self.head_size)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attention_output = nn.Linear(c.hidden, c.hidden)
        self.attention_norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.intermediate = nn.Linear(c.hidden, c.intermediate)
        self.gelu = nn.GELU()  # erf form, as HF "gelu"
        self.output = nn.Linear(c.intermediate, c.hidden)
        self.output_norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)

    def forward(self, hidden, additive_mask):
        attended = self.attention_norm(self.attention_output(self.attention(hidden, additive_mask)) + hidden)
        return self.output_norm(self.output(self.gelu(self.intermediate(attended))) + attended)


class BertEncoder(nn.Module):
    """Embeddings (word + position + segment, LayerNorm) and 12 post-LN encoder layers."""

    def __init__(self, c=BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden)
        self.position_embeddings = nn.Embedding(c.max_positions, c.hidden)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden)
        self.embedding_norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.layers = nn.ModuleList([BertLayer(c) for _ in range(c.layers)])
        self.register_buffer("position_ids", torch.arange(c.max_positions).unsqueeze(0), persistent=False)
        init_like_hf(self)

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq = input_ids.shape[1]
        hidden = (self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :seq]) +
                  self.token_type_embeddings(token_type_ids))
        hidden = self.embedding_norm(hidden)
        # HF's extended mask: 0 where attended, the most negative float where padded.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            hidden = layer(hidden, additive_mask)
        return hidden


# --- GPT-2-small (HF GPT2Model architecture, pre-LN, causal) ------------------------------------

class Gpt2Config:
    vocab_size = 50257
    positions = 1024
    hidden = 768
    layers = 12
    heads = 12
    layer_norm_eps = 1e-5


class Gpt2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.head_size = c.hidden // c.heads
        self.qkv = nn.Linear(c.hidden, 3 * c.hidden)  # HF's c_attn
        self.proj = nn.Linear(c.hidden, c.hidden)      # HF's c_proj
        causal = torch.tril(torch.ones(c.positions, c.positions, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, c.positions, c.positions), persistent=False)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden):
        q, k, v = self.qkv(hidden).split(hidden.shape[-1], dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        seq = hidden.shape[1]
        masked = torch.finfo(scores.dtype).min
        scores = torch.where(self.causal[:, :, :seq, :seq], scores, torch.tensor(masked, dtype=scores.dtype))
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        b = context.shape[0]
        return self.proj(context.view(b, seq, self.heads * self.head_size))


class Gpt2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.attn = Gpt2Attention(c)
        self.ln_2 = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.fc = nn.Linear(c.hidden, 4 * c.hidden)
        self.gelu = nn.GELU(approximate="tanh")  # HF "gelu_new"
        self.proj = nn.Linear(4 * c.hidden, c.hidden)

    def forward(self, hidden):
        hidden = hidden + self.attn(self.ln_1(hidden))
        return hidden + self.proj(self.gelu(self.fc(self.ln_2(hidden))))


class Gpt2Decoder(nn.Module):
    """Token and position embeddings, 12 pre-LN causal blocks, final LayerNorm; returns the last
    hidden state (the tied LM head, a 768x50257 MatMul, is left out)."""

    def __init__(self, c=Gpt2Config):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.hidden)
        self.wpe = nn.Embedding(c.positions, c.hidden)
        self.blocks = nn.ModuleList([Gpt2Block(c) for _ in range(c.layers)])
        self.ln_f = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(c.positions).unsqueeze(0), persistent=False)
        init_like_hf(self)
        # GPT-2 scales the residual projections by 1/sqrt(2 * layers) at init.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.layers))

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        hidden = self.wte(input_ids) + self.wpe(self.position_ids[:, :seq])
        for block in self.blocks:
            hidden = block(hidden)
        return self.ln_f(hidden)


def init_like_hf(module):
    """HF's initializer_range = 0.02: normal weights, zero biases, unit LayerNorm."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


def randomize_batch_norms(module, generator):
    """A freshly initialized BatchNorm is the identity in eval mode; random statistics and affine
    parameters make BatchNorm folding matter for the output check."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=generator) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=generator) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=generator) * 0.1)


# --- The model list -----------------------------------------------------------------------------

def build_model(name):
    """The eval-mode module for `name`, with seeded random weights (identical on every call)."""
    import torchvision

    name = base_model(name)
    torch.manual_seed(MODEL_SEED)
    if name == "resnet50":
        model = torchvision.models.resnet50(weights=None)
    elif name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(weights=None)
    elif name == "vit_b_16":
        model = torchvision.models.vit_b_16(weights=None)
        # torchvision zero-initializes the classification head, which would make every output 0.
        nn.init.normal_(model.heads.head.weight, mean=0.0, std=0.02)
        nn.init.normal_(model.heads.head.bias, mean=0.0, std=0.02)
    elif name == "bert_base":
        model = BertEncoder()
    elif name == "gpt2_small":
        model = Gpt2Decoder()
    else:
        raise ValueError(f"unknown model '{name}' (known: {', '.join(ALL_MODELS + DYNAMIC_MODELS)})")
    randomize_batch_norms(model, torch.Generator().manual_seed(MODEL_SEED + 1))
    return model.eval()


def input_names(name):
    name = base_model(name)
    if name == "bert_base":
        return ["input_ids", "attention_mask", "token_type_ids"]
    if name == "gpt2_small":
        return ["input_ids"]
    return ["input"]


def output_names(name):
    return ["last_hidden_state"] if base_model(name) in ("bert_base", "gpt2_small") else ["output"]


def make_inputs(name, batch, sequence=SEQUENCE, image=IMAGE):
    """Seeded inputs as numpy arrays, in input_names() order."""
    name = base_model(name)
    rng = np.random.default_rng(INPUT_SEED + batch)
    if name == "bert_base":
        ids = rng.integers(0, BertConfig.vocab_size, size=(batch, sequence), dtype=np.int64)
        # Rows are padded to different lengths so the attention mask matters.
        lengths = [max(1, sequence - sequence // 8 * (i % 4) - (sequence // 16 if batch == 1 else 0))
                   for i in range(batch)]
        mask = np.zeros((batch, sequence), dtype=np.int64)
        segments = np.zeros((batch, sequence), dtype=np.int64)
        for i, n in enumerate(lengths):
            mask[i, :n] = 1
            segments[i, n // 2:] = 1
        return [ids, mask, segments]
    if name == "gpt2_small":
        return [rng.integers(0, Gpt2Config.vocab_size, size=(batch, SEQUENCE), dtype=np.int64)]
    return [rng.standard_normal((batch, 3, image, image), dtype=np.float32)]


def model_dir(out_dir, name, batch):
    return os.path.join(out_dir, f"{name}_b{batch}")


def export_one(model, name, batch, out_dir):
    base = model_dir(out_dir, name, batch)
    onnx_path = base + ".onnx"
    inputs = make_inputs(name, batch)
    tensors = tuple(torch.from_numpy(x) for x in inputs)
    os.makedirs(os.path.join(base, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(base, "torch_outputs"), exist_ok=True)
    for n, x in zip(input_names(name), inputs):
        np.save(os.path.join(base, "inputs", n + ".npy"), x)

    start = time.perf_counter()
    # Grad stays enabled during export: in no-grad mode torch 1.13's nn.MultiheadAttention takes a
    # fused fast path that the exporter cannot translate.
    dynamic_axes = None
    if name in DYNAMIC_MODELS:
        axes = DYNAMIC_AXES[base_model(name)]
        outputs = {n: ({0: "batch", 1: "sequence"} if base_model(name) == "bert_base" else {0: "batch"})
                   for n in output_names(name)}
        dynamic_axes = {**{n: axes for n in input_names(name)}, **outputs}
    torch.onnx.export(model, tensors, onnx_path, opset_version=OPSET, do_constant_folding=True,
                      input_names=input_names(name), output_names=output_names(name), dynamic_axes=dynamic_axes)
    export_s = time.perf_counter() - start

    with torch.inference_mode():
        outputs = model(*tensors)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    for n, y in zip(output_names(name), outputs):
        y = y.numpy()
        # An output that is constant would make the comparison vacuous.
        if not np.all(np.isfinite(y)) or float(np.std(y)) < 1e-6:
            raise RuntimeError(f"{name} batch {batch}: output '{n}' is not finite or nearly constant (std {np.std(y)})")
        np.save(os.path.join(base, "torch_outputs", n + ".npy"), y)
    return {
        "model": name,
        "batch": batch,
        "onnx": os.path.basename(onnx_path),
        "dir": os.path.basename(base),
        "inputs": input_names(name),
        "outputs": output_names(name),
        "items": batch,
        "recipe": RECIPES[name],
        "export_s": round(export_s, 2),
        "onnx_mb": round(os.path.getsize(onnx_path) / 2**20, 1),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    parser.add_argument("--models", default=",".join(ALL_MODELS))
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--force", action="store_true", help="re-export models that already exist")
    args = parser.parse_args()

    torch.set_num_threads(os.cpu_count() or 1)
    os.makedirs(args.out_dir, exist_ok=True)
    manifest_path = os.path.join(args.out_dir, "manifest.json")
    manifest = {"entries": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    import torchvision
    manifest.update({"torch": torch.__version__, "torchvision": torchvision.__version__, "opset": OPSET,
                     "sequence": SEQUENCE, "image": IMAGE, "model_seed": MODEL_SEED, "input_seed": INPUT_SEED})

    batches = [int(b) for b in args.batches.split(",")]
    for name in args.models.split(","):
        todo = [b for b in batches
                if args.force or manifest["entries"].get(f"{name}_b{b}", {}).get("recipe") != RECIPES[name]
                or not os.path.exists(model_dir(args.out_dir, name, b) + ".onnx")]
        if not todo:
            print(f"{name}: present")
            continue
        start = time.perf_counter()
        model = build_model(name)
        build_s = time.perf_counter() - start
        for batch in todo:
            entry = export_one(model, name, batch, args.out_dir)
            entry["build_s"] = round(build_s, 2)
            manifest["entries"][entry["dir"]] = entry
            print(f"{entry['dir']}: exported in {entry['export_s']} s ({entry['onnx_mb']} MiB), "
                  f"model built in {build_s:.1f} s", flush=True)
            with open(manifest_path, "w") as f:
                json.dump(manifest, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
