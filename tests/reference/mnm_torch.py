#!/usr/bin/python3
"""mnm_torch.py - the MNM baseline's forward in PyTorch (float64), for autograd gradients.

What it is for: a second, batched implementation of docs/MODEL.md's MNM section (independent of
mnm_reference.py's numpy code, which test_mnm_reference.py checks it against), and the gradients of
the training objective (task cross entropy plus the meta-objective term) with respect to every
tensor, for the trainer's gradient checks. Lanes are independent sessions; a window's state can be
carried in and out (truncated backpropagation: the caller detaches it between windows).

What it is not for: training anything, or sharing code with the C implementation.
Needs PyTorch (Debian: python3-torch).
"""

import numpy as np
import torch

from mnm_reference import tensor_list, DEFAULT_META_WEIGHT

DT = torch.float64


def to_torch(params, requires_grad=False):
    """dict name -> numpy array  ->  dict name -> float64 tensor (leaf, optionally with grad)."""
    return {k: torch.tensor(np.asarray(v, dtype=np.float64), dtype=DT, requires_grad=requires_grad)
            for k, v in params.items()}


def reset_state(hp, P, lanes):
    H, dv = hp["hidden_size"], hp["value_length"]
    return {
        "h": torch.zeros(lanes, H, dtype=DT), "c": torch.zeros(lanes, H, dtype=DT),
        "r": torch.zeros(lanes, dv, dtype=DT),
        "M": [P[f"mnm.memory.{l}.init"].unsqueeze(0).expand(lanes, -1, -1)
              for l in range(hp["memory_layers"])],
    }


def detach_state(state):
    return {"h": state["h"].detach(), "c": state["c"].detach(), "r": state["r"].detach(),
            "M": [m.detach() for m in state["M"]]}


def _mem(M, keys):
    """keys [B, n, d_k] through per-lane memories M[l] [B, rows, cols]; all activations."""
    acts = [keys]
    for l, Ml in enumerate(M):
        a = torch.bmm(acts[-1], Ml.transpose(1, 2))
        acts.append(a if l == len(M) - 1 else torch.tanh(a))
    return acts


def forward(hp, P, tokens, state=None):
    """tokens: int array [T, B]. Returns logits [T, B, V], the final state, meta terms [T, B]."""
    tokens = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
    if tokens.dim() == 1:
        tokens = tokens.unsqueeze(1)
    T, B = tokens.shape
    H, Nh = hp["hidden_size"], hp["head_count"]
    dk, dv, Lm = hp["key_length"], hp["value_length"], hp["memory_layers"]
    widths = [shape[0] for name, shape in tensor_list(hp) if name.startswith("mnm.memory.")]
    if state is None:
        state = reset_state(hp, P, B)
    h, c, r, M = state["h"], state["c"], state["r"], list(state["M"])
    logits_all, meta_all = [], []
    split_u = [Nh * dk, Nh * dk, Nh * dv, dk]
    for t in range(T):
        x = P["token_embd.weight"][tokens[t]]                          # [B, E]
        g = torch.cat([x, r], 1) @ P["lstm.weight_ih"].T + h @ P["lstm.weight_hh"].T + P["lstm.bias"]
        gi, gf, gz, go = g.split(H, 1)
        c = torch.sigmoid(gf + hp["forget_bias"]) * c + torch.sigmoid(gi) * torch.tanh(gz)
        h = torch.sigmoid(go) * torch.tanh(c)
        u = torch.tanh(h @ P["mnm.interact.weight"].T + P["mnm.interact.bias"])
        kr, kw, vw, bp = u.split(split_u, 1)
        kr, kw, vw = kr.reshape(B, Nh, dk), kw.reshape(B, Nh, dk), vw.reshape(B, Nh, dv)
        beta = torch.sigmoid(bp @ P["mnm.rate.weight"].T + P["mnm.rate.bias"])  # [B, 1]
        acts = _mem(M, kw)
        tgt = (vw @ P["mnm.target.weight"].T + P["mnm.target.bias"]).split(widths, 2)
        newM = []
        for l in range(Lm):
            err = acts[l + 1] - tgt[l]                                    # [B, Nh, D_l]
            upd = torch.bmm(err.transpose(1, 2), acts[l])                  # [B, D_l, D_(l-1)]
            newM.append(M[l] - (beta * (2.0 / (Nh * widths[l])))[:, :, None] * upd)
        M = newM
        r = _mem(M, kr)[-1].mean(1)
        y = torch.cat([h, r], 1) @ P["mnm.out.weight"].T + P["mnm.out.bias"]
        logits_all.append(y @ P["output.weight"].T + P["output.bias"])
        meta_all.append(((_mem(M, kw)[-1] - vw) ** 2).mean((1, 2)))
    return (torch.stack(logits_all), {"h": h, "c": c, "r": r, "M": M}, torch.stack(meta_all))


def objective(hp, P, tokens, targets, loss_mask, meta_weight=DEFAULT_META_WEIGHT, state=None):
    """The training objective of one window over all lanes: mean cross entropy over the loss
    positions plus meta_weight x the mean meta term over the positions whose input is not padding.
    Returns (total, task, meta, final state)."""
    logits, final, metas = forward(hp, P, tokens, state)
    tok = torch.as_tensor(np.asarray(tokens), dtype=torch.long).reshape(metas.shape)
    tgt = torch.as_tensor(np.asarray(targets), dtype=torch.long).reshape(metas.shape)
    mask = torch.as_tensor(np.asarray(loss_mask), dtype=torch.bool).reshape(metas.shape)
    logp = torch.log_softmax(logits, dim=2).gather(2, tgt.unsqueeze(2)).squeeze(2)
    task = -(logp[mask]).mean() if bool(mask.any()) else logits.sum() * 0
    real = tok != hp["padding_token_id"]
    meta = metas[real].mean() if bool(real.any()) else metas.sum() * 0
    return task + meta_weight * meta, task, meta, final


def gradients(hp, params, tokens, targets, loss_mask, meta_weight=DEFAULT_META_WEIGHT, prefix=None):
    """(total, task, meta, {name: gradient as numpy float64}). The window starts from the reset
    state, or, with `prefix` (tokens [T0, B]), from the state after reading the prefix, detached as
    at a truncated-backpropagation boundary. The fixed initial memory gets a gradient too (through
    the reset state; the trainer does not apply it)."""
    P = to_torch(params, requires_grad=True)
    state = None
    if prefix is not None:
        with torch.no_grad():
            _, state, _ = forward(hp, P, prefix)
        state = detach_state(state)
    total, task, meta, _ = objective(hp, P, tokens, targets, loss_mask, meta_weight, state)
    total.backward()
    grads = {k: (v.grad.numpy().copy() if v.grad is not None else np.zeros(tuple(v.shape)))
             for k, v in P.items()}
    return float(total), float(task), float(meta), grads


def main(argv):
    """grads MODEL --tokens T --targets T --mask 0,1,.. [--meta-weight L] --out FILE: one lane's
    window from the reset state; writes the gradients as little-endian float64, tensors in file
    order, each row-major, and prints total, task and meta loss."""
    import argparse
    from mnm_reference import read_model
    ap = argparse.ArgumentParser(description="MNM objective gradients by autograd")
    ap.add_argument("cmd", choices=["grads"])
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--mask", required=True)
    ap.add_argument("--meta-weight", type=float, default=DEFAULT_META_WEIGHT)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    hp, _, params = read_model(a.model)

    def ints(text):
        return [int(x) for x in text.split(",") if x != ""]

    toks, tgts, mask = ints(a.tokens), ints(a.targets), [bool(x) for x in ints(a.mask)]
    if not (len(toks) == len(tgts) == len(mask)):
        raise SystemExit("tokens, targets and mask differ in length")
    col = lambda v: np.array(v).reshape(-1, 1)  # noqa: E731
    total, task, meta, g = gradients(hp, params, col(toks), col(tgts), col(mask), a.meta_weight)
    with open(a.out, "wb") as f:
        for name, _ in tensor_list(hp):
            f.write(g[name].astype("<f8").tobytes())
    print(f"total {total!r} task {task!r} meta {meta!r}")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
