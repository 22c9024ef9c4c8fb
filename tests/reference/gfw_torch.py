#!/usr/bin/python3
"""gfw_torch.py - a second, PyTorch implementation of the Gated Fast Weights forward ("gfw").

What it is for: autograd gradients of the spec's model (docs/MODEL.md, "The Gated Fast Weights
model") for checking a trainer's backward pass, batched lanes, and the small AR training demo of
test_gfw_reference.py. Written from the spec separately from gfw_reference.py (batched, no shared
code beyond the tensor list and sizes); test_gfw_reference.py checks the two against each other.
"""

import torch

import gfw_reference as ref


def to_torch(params, dtype=torch.float64, requires_grad=False):
    return {k: torch.tensor(v, dtype=dtype, requires_grad=requires_grad) for k, v in params.items()}


def zero_state(hp, B, dtype=torch.float64):
    s = ref.sizes(hp)
    m, N = hp["fast_hidden"], hp["slow_hidden"]
    return (torch.zeros(B, m, dtype=dtype), torch.zeros(B, N, dtype=dtype),
            torch.zeros(B, m, s["f1_cols"], dtype=dtype), torch.zeros(B, m, s["f2_cols"], dtype=dtype))


def _ln(v, eps):
    mu = v.mean(dim=-1, keepdim=True)
    var = (v - mu).pow(2).mean(dim=-1, keepdim=True)
    return (v - mu) * torch.rsqrt(var + eps)


def _blend(F, upd, rows, cols):
    a, b, g, d = torch.split(upd, [rows, cols, rows, cols], dim=-1)
    Hm = torch.tanh(a).unsqueeze(2) * torch.tanh(b).unsqueeze(1)
    Tm = torch.sigmoid(g).unsqueeze(2) * torch.sigmoid(d).unsqueeze(1)
    return F + Tm * (Hm - F)


def forward(hp, P, tokens, state=None):
    """tokens [T, B] (ints) -> (logits [T, B, V], final state tuple (hF, hS, F1, F2))."""
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    T, B = tokens.shape
    dtype = P["output.weight"].dtype
    hF, hS, F1, F2 = zero_state(hp, B, dtype) if state is None else state
    s = ref.sizes(hp)
    m, N, eps = hp["fast_hidden"], hp["slow_hidden"], hp["layer_norm_epsilon"]
    one = torch.ones(B, 1, dtype=dtype)
    emb = P["token_embd.weight"][tokens]  # [T, B, E]
    out = []
    for t in range(T):
        e = emb[t]
        x1 = torch.cat([hF, e, one], dim=1)
        a = _ln(torch.tanh(torch.bmm(F1, x1.unsqueeze(2)).squeeze(2)), eps)
        hF = _ln(torch.tanh(torch.bmm(F2, torch.cat([a, one], dim=1).unsqueeze(2)).squeeze(2)), eps)
        out.append(hF @ P["output.weight"].T + P["output.bias"])
        sv = torch.tanh(torch.cat([hS, e], dim=1) @ P["gfw.slow.0.weight"].T + P["gfw.slow.0.bias"])
        o = sv @ P["gfw.slow.1.weight"].T + P["gfw.slow.1.bias"]
        z, d1, d2 = torch.split(o, [N, s["u1"], s["u2"]], dim=1)
        hS = torch.tanh(z)
        F1 = _blend(F1, d1, m, s["f1_cols"])
        F2 = _blend(F2, d2, m, s["f2_cols"])
    return torch.stack(out), (hF, hS, F1, F2)
