#!/usr/bin/python3
"""torch_step.py - the FWM step (docs/MODEL.md) in PyTorch on the CPU, for bench-step's
comparison; with --arch lstm, the LSTM baseline's step (docs/MODEL.md, "The LSTM baseline": L
stacked torch LSTMCells, residual from the second layer on, output projection with its bias). Same math as libfwm's step: LSTM cell (torch's fused LSTMCell, forget bias folded into
its bias), write (outer-product keys, delta rule, Frobenius normalisation), N_r chained reads with
layer norm, read-out and output projection; float32, torch.no_grad(), random weights.

Prints one parseable line with medians over repetitions:
  torch_step: batch1_us_per_step=X batch64_tokens_per_s=Y batch64_2threads_tokens_per_s=Z
(batch 1 and batch 64 on one thread; batch 64 on two threads), and one with the machine's float32
matrix-product rate through torch.mm (a [64, H] x [H, V] product, the batched step's largest), the
rate a batched step's FLOPs are held against:
  torch_sgemm: gflops_1thread=X gflops_2threads=Y
"""
import argparse
import statistics
import time

import torch


def build(V, E, H, S, R, T, Nr, seed=2021):
    g = torch.Generator().manual_seed(seed)

    def uniform(shape, a):
        return (torch.rand(shape, generator=g) * 2 - 1) * a

    a = (6.0 / (H + S)) ** 0.5
    m = {
        "emb": torch.randn(V, E, generator=g),
        "w_ih": uniform((4 * H, E), H ** -0.5),
        "w_hh": uniform((4 * H, H), H ** -0.5),
        "b": uniform((4 * H,), 0.5),
        "w_write": uniform((S + R + T + 1, H), a),
        "b_write": uniform((S + R + T + 1,), H ** -0.5),
        "w_read": uniform((S + Nr * R, H), a),
        "b_read": uniform((S + Nr * R,), H ** -0.5),
        "w_o": uniform((H, T), T ** -0.5),
        "b_o": uniform((H,), T ** -0.5),
        "w_s": torch.randn(V, H, generator=g) * (2.0 / (V + H)) ** 0.5,
    }
    cell = torch.nn.LSTMCell(E, H)
    with torch.no_grad():
        cell.weight_ih.copy_(m["w_ih"])
        cell.weight_hh.copy_(m["w_hh"])
        bias = m["b"].clone()
        bias[H:2 * H] += 1.0  # forget_bias
        cell.bias_ih.copy_(bias)
        cell.bias_hh.zero_()
    m["cell"] = cell
    return m


def step(m, dims, tokens, state):
    V, E, H, S, R, T, Nr = dims
    h, c, F = state
    B = tokens.shape[0]
    e = m["emb"][tokens]
    h, c = m["cell"](e, (h, c))
    w = torch.addmm(m["b_write"], h, m["w_write"].t())
    k1 = torch.tanh(w[:, :S])
    k2 = torch.tanh(w[:, S:S + R])
    v = torch.tanh(w[:, S + R:S + R + T])
    beta = torch.sigmoid(w[:, S + R + T:] + 1.0)
    K = (k1[:, :, None] * k2[:, None, :]).reshape(B, 1, S * R)
    v_old = torch.bmm(K, F).squeeze(1)
    F.baddbmm_(K.transpose(1, 2), (beta * (v - v_old) * (1.0 / T))[:, None, :])  # in place
    norm = F.reshape(B, -1).norm(dim=1).clamp(min=1.0)
    F.div_(norm[:, None, None])
    u = torch.addmm(m["b_read"], h, m["w_read"].t())
    q = u[:, :S]
    for i in range(Nr):
        te = torch.tanh(u[:, S + i * R:S + (i + 1) * R])
        x = (q[:, :, None] * te[:, None, :]).reshape(B, 1, S * R)
        z = torch.bmm(x, F).squeeze(1)
        q = torch.nn.functional.layer_norm(z, (T,), eps=1e-5)
    y = torch.addmm(m["b_o"], q, m["w_o"].t())
    logits = y @ m["w_s"].t()
    return logits, (h, c, F)


def build_lstm(V, E, H, L, seed=2021):
    g = torch.Generator().manual_seed(seed)
    cells = []
    for layer in range(L):
        cell = torch.nn.LSTMCell(E if layer == 0 else H, H)
        with torch.no_grad():
            for p in cell.parameters():
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * H ** -0.5)
        cells.append(cell)
    return {"emb": torch.randn(V, E, generator=g), "cells": cells,
            "w_s": torch.randn(V, H, generator=g) * (2.0 / (V + H)) ** 0.5,
            "b_s": torch.zeros(V)}


def step_lstm(m, dims, tokens, state):
    x = m["emb"][tokens]
    new = []
    for layer, cell in enumerate(m["cells"]):
        h, c = cell(x, state[layer])
        new.append((h, c))
        x = h + x if layer >= 1 else h
    return torch.addmm(m["b_s"], x, m["w_s"].t()), new


def sgemm_gflops(H, V, threads, repetitions):
    torch.set_num_threads(threads)
    a, b = torch.randn(64, H), torch.randn(H, V)
    rates = []
    with torch.no_grad():
        for _ in range(repetitions):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < 0.1:
                torch.mm(a, b)
                n += 1
            rates.append(2.0 * 64 * H * V * n / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def measure(m, dims, batch, threads, repetitions, seconds, arch="fwm"):
    V, E, H, S, R, T, Nr = dims
    torch.set_num_threads(threads)
    if arch == "lstm":
        state = [(torch.zeros(batch, H), torch.zeros(batch, H)) for _ in m["cells"]]
        step_fn = step_lstm
    else:
        state = (torch.zeros(batch, H), torch.zeros(batch, H), torch.zeros(batch, S * R, T))
        step_fn = step
    tokens = torch.randint(0, V, (4096, batch), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < 0.2:  # warm-up, and an estimate of the step time
            _, state = step_fn(m, dims, tokens[n % 4096], state)
            n += 1
        steps = max(5, int(n / 0.2 * seconds))
        per_step = []
        for _ in range(repetitions):
            t0 = time.perf_counter()
            for k in range(steps):
                _, state = step_fn(m, dims, tokens[k % 4096], state)
            per_step.append((time.perf_counter() - t0) / steps)
    return statistics.median(per_step)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=180)
    p.add_argument("--embedding", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--s", type=int, default=32)
    p.add_argument("--r", type=int, default=32)
    p.add_argument("--t", type=int, default=32)
    p.add_argument("--reads", type=int, default=3)
    p.add_argument("--repetitions", type=int, default=7)
    p.add_argument("--arch", choices=("fwm", "lstm"), default="fwm")
    p.add_argument("--layers", type=int, default=1, help="--arch lstm: stacked layers")
    p.add_argument("--seconds", type=float, default=0.25, help="per repetition")
    a = p.parse_args()
    dims = (a.vocab, a.embedding, a.hidden, a.s, a.r, a.t, a.reads)
    m = build_lstm(a.vocab, a.embedding, a.hidden, a.layers) if a.arch == "lstm" else build(*dims)
    b1 = measure(m, dims, 1, 1, a.repetitions, a.seconds, a.arch)
    b64 = measure(m, dims, 64, 1, a.repetitions, a.seconds, a.arch)
    b64_2 = measure(m, dims, 64, 2, a.repetitions, a.seconds, a.arch)
    print(f"torch {torch.__version__}: batch 1: {b1 * 1e6:.1f} us/step; batch 64: "
          f"{64 / b64:.0f} tokens/s on 1 thread, {64 / b64_2:.0f} tokens/s on 2 threads")
    print(f"torch_step: batch1_us_per_step={b1 * 1e6:.2f} batch64_tokens_per_s={64 / b64:.0f} "
          f"batch64_2threads_tokens_per_s={64 / b64_2:.0f}")
    print(f"torch_sgemm: gflops_1thread={sgemm_gflops(a.hidden, a.vocab, 1, a.repetitions):.2f} "
          f"gflops_2threads={sgemm_gflops(a.hidden, a.vocab, 2, a.repetitions):.2f}")


if __name__ == "__main__":
    main()
