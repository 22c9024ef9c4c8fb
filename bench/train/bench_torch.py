#!/usr/bin/env python3
"""bench_torch.py - training throughput of fwm-train's C kernels next to a PyTorch CPU rendering
of the same model (paper sizes, batch 32, window 200, LM mode: forward, backward, Adam) in one run,
with the ratio. Prints figures; never fails on time. Without python3-torch it prints the C figure
only.

usage: bench_torch.py BENCH_TRAIN [--threads N] [--steps N]
"""
import argparse
import os
import re
import subprocess
import sys
import time


def c_figure(exe, threads, steps):
    out = subprocess.run([exe, "--threads", str(threads), "--steps", str(steps)], check=True,
                         capture_output=True, text=True).stdout
    print(out.strip())
    return float(re.search(r"tokens_per_second (\d+)", out).group(1))


def torch_figure(threads, steps, B=32, W=200, V=180, E=256, H=256, S=32, R=32, T=32, NR=3):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)

    class FWM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, E)
            self.lstm = torch.nn.LSTM(E, H, batch_first=True)
            self.write = torch.nn.Linear(H, S + R + T + 1)
            self.read = torch.nn.Linear(H, S + NR * R)
            self.out = torch.nn.Linear(T, H)
            self.proj = torch.nn.Linear(H, V, bias=False)

        def forward(self, x, F):
            h, _ = self.lstm(self.emb(x))                      # [B, W, H]
            w = self.write(h)
            k1, k2, v = (torch.tanh(w[..., :S]), torch.tanh(w[..., S:S + R]),
                         torch.tanh(w[..., S + R:S + R + T]))
            beta = torch.sigmoid(w[..., -1:] + 1)
            u = self.read(h)
            q0, e = u[..., :S], torch.tanh(u[..., S:]).view(B, W, NR, R)
            outs = []
            F = F.view(B, S * R, T)                            # [B, S*R, T], batched matmuls
            for t in range(W):
                K = (k1[:, t, :, None] * k2[:, t, None, :]).view(B, 1, S * R)
                v_old = torch.bmm(K, F).squeeze(1)             # F^T K
                d = beta[:, t] * (v[:, t] - v_old) / T
                F = F + K.transpose(1, 2) * d[:, None, :]
                n = F.flatten(1).norm(dim=1).clamp(min=1).view(B, 1, 1)
                F = F / n
                q = q0[:, t]
                for i in range(NR):
                    key = (q[:, :, None] * e[:, t, i, None, :]).view(B, 1, S * R)
                    q = torch.bmm(key, F).squeeze(1)
                    q = torch.nn.functional.layer_norm(q, (T,))
                outs.append(self.out(q))
            F = F.view(B, S, R, T)
            return self.proj(torch.stack(outs, 1)), F.detach()

    model = FWM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randint(1, V, (B, W))
    y = torch.randint(1, V, (B, W))
    F = torch.zeros(B, S, R, T)
    times, cpu = [], 0.0
    for step in range(steps + 1):
        t0 = time.perf_counter()
        c0 = time.process_time()
        logits, F = model(x, F)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step:
            times.append(time.perf_counter() - t0)
            cpu += time.process_time() - c0
    rate = B * W * len(times) / sum(times)
    print("PyTorch %s CPU rendering (LM mode, B=%d, W=%d, %d thread(s)): %.0f tokens/s, "
          "%.0f tokens per CPU-second" % (torch.__version__, B, W, threads, rate,
                                          B * W * len(times) / cpu))
    return rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_train")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    c_rate = c_figure(args.bench_train, args.threads, args.steps)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("python3-torch is not installed: no PyTorch comparison")
        return 0
    t_rate = torch_figure(args.threads, max(2, args.steps // 2))
    print("fwm-train / PyTorch: %.1fx" % (c_rate / t_rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
