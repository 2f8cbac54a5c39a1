"""Writes tests/fixtures/torch/block_reference.json: a pre-LN transformer block computed by PyTorch.

The reference values of issue 50 for shardflow's `block:H[:causal]` (core/layers/transformer_block.hpp):
a block written with PyTorch's own modules (nn.LayerNorm, nn.Linear, F.scaled_dot_product_attention
with and without its causal mask, F.gelu with the tanh approximation) in float64, on a seeded random
input and random parameters (biases and layer-norm parameters too, so none sits at a special value).
For each case the file holds the input x, every parameter in shardflow's layout and names (kernels
(in, out); the fused qkv projection's units head-major: head h's query, key, value at
[3 h dh, 3 (h + 1) dh)), the output y, and for a seeded output gradient dy the input gradient dx and
every parameter's gradient (autograd). tests/core/transformer_reference_test.cpp loads the
parameters into shardflow's block and compares. Not part of ./test.sh: run it by hand when the
block changes, through the venv of bench/peers/run_torch_peer.sh:

    bench/peers/run_torch_peer.sh --script torch_block_reference.py [--out FILE]
"""
import argparse
import json
import pathlib

import torch
from torch.nn import functional as F

CASES = [  # (name, batch, time, features, heads, causal)
    ("causal", 2, 5, 8, 2, True),
    ("bidirectional", 2, 5, 8, 2, False),
    ("one_head_long", 1, 70, 4, 1, True),  # 70 > 64: crosses shardflow's attention tiles
]


def block(x, p, heads, causal):
    b, t, d = x.shape
    h = F.layer_norm(x, (d,), p["ln1.weight"], p["ln1.bias"], eps=1e-5)
    qkv = F.linear(h, p["qkv.weight"], p["qkv.bias"])
    q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in qkv.split(d, dim=2))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    x = x + F.linear(a.transpose(1, 2).reshape(b, t, d), p["proj.weight"], p["proj.bias"])
    h = F.layer_norm(x, (d,), p["ln2.weight"], p["ln2.bias"], eps=1e-5)
    h = F.gelu(F.linear(h, p["fc.weight"], p["fc.bias"]), approximate="tanh")
    return x + F.linear(h, p["out.weight"], p["out.bias"])


def head_major(w, d, heads):
    """torch's qkv rows [q heads | k heads | v heads] -> shardflow's units per head [q k v]."""
    dh = d // heads
    order = [part * d + h * dh + j for h in range(heads) for part in range(3) for j in range(dh)]
    return w[order]


def ours(p, d, heads):
    """Parameters (or their gradients) under shardflow's names and layouts."""
    return {
        "ln1/gamma": p["ln1.weight"], "ln1/beta": p["ln1.bias"],
        "attention/qkv/kernel": head_major(p["qkv.weight"], d, heads).T,
        "attention/qkv/bias": head_major(p["qkv.bias"], d, heads),
        "attention/output/kernel": p["proj.weight"].T, "attention/output/bias": p["proj.bias"],
        "ln2/gamma": p["ln2.weight"], "ln2/beta": p["ln2.bias"],
        "mlp/fc/kernel": p["fc.weight"].T, "mlp/fc/bias": p["fc.bias"],
        "mlp/proj/kernel": p["out.weight"].T, "mlp/proj/bias": p["out.bias"],
    }


def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]


def case(name, b, t, d, heads, causal, gen):
    shapes = {"ln1.weight": (d,), "ln1.bias": (d,), "qkv.weight": (3 * d, d), "qkv.bias": (3 * d,),
              "proj.weight": (d, d), "proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
              "fc.weight": (4 * d, d), "fc.bias": (4 * d,), "out.weight": (d, 4 * d), "out.bias": (d,)}
    p = {}
    for key, shape in shapes.items():
        v = torch.randn(shape, generator=gen, dtype=torch.float64) * (0.5 if "weight" in key else 0.1)
        if key.startswith("ln") and key.endswith("weight"):
            v = 1.0 + v * 0.2
        p[key] = v.requires_grad_()
    x = torch.randn((b, t, d), generator=gen, dtype=torch.float64, requires_grad=True)
    dy = torch.randn((b, t, d), generator=gen, dtype=torch.float64)
    y = block(x, p, heads, causal)
    y.backward(dy)
    return {
        "name": name, "batch": b, "time": t, "features": d, "heads": heads, "causal": causal,
        "x": flat(x), "dy": flat(dy), "y": flat(y), "dx": flat(x.grad),
        "params": {k: flat(v) for k, v in ours({k: v.detach() for k, v in p.items()}, d, heads).items()},
        "grads": {k: flat(v) for k, v in ours({k: v.grad for k, v in p.items()}, d, heads).items()},
    }


def main():
    here = pathlib.Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(here.parent.parent / "tests/fixtures/torch/block_reference.json"))
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(50)
    doc = {"written_by": f"bench/peers/torch_block_reference.py with PyTorch {torch.__version__}, float64",
           "cases": [case(*c, gen) for c in CASES]}
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
