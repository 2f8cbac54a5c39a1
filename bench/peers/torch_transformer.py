"""PyTorch peer of `shardflow-bench transformer` (issue 50): the same GPT-style model, trained the same way.

nanoGPT's model written out (Karpathy's model.py, the character-level Shakespeare configuration by
default): token and learned position embeddings, L pre-LN blocks (LayerNorm, causal self-attention
through one Linear(D, 3D) and F.scaled_dot_product_attention, Linear(D, D); LayerNorm, Linear(D, 4D),
tanh-approximated GELU, Linear(4D, D)), a final LayerNorm and a Linear(D, V) head with a bias and
untied from the embedding, as shardflow's `tokens:V:D, L x block:H:causal, layernorm, dense:V`.
Random token ids, next-token cross-entropy, Adam (lr 1e-3), no dropout, on --threads intra-op
threads. Prints one JSON line: tokens/s from the median step (forward, loss, backward, update)
over --steps steps after 2 warm-up steps. --precision bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16). Run by bench/peers/run_torch_peer.sh.
"""
import argparse
import contextlib
import json
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tokens = nn.Embedding(a.vocab, a.dim)
        self.positions = nn.Embedding(a.time, a.dim)
        self.blocks = nn.ModuleList(Block(a.dim, a.heads) for _ in range(a.layers))
        self.ln = nn.LayerNorm(a.dim)
        self.head = nn.Linear(a.dim, a.vocab)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 6), ("dim", 384), ("heads", 6), ("time", 256), ("vocab", 65),
                          ("batch", 8), ("threads", 1), ("steps", 5)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Gpt(a)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(0, a.vocab, (a.batch, a.time))
    targets = torch.roll(ids, -1, dims=1)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if a.precision == "bf16"
                else contextlib.nullcontext())
    steps = []
    for s in range(2 + a.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast:
            logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), targets.view(-1))
        loss.backward()
        opt.step()
        if s >= 2:
            steps.append(time.perf_counter() - start)
    step = statistics.median(steps)
    print(json.dumps({"peer": "torch", "torch": torch.__version__, "tokens_per_s": a.batch * a.time / step,
                      "step_s": step, "loss": loss.item(), "threads": a.threads, "precision": a.precision,
                      "parameters": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
