#!/usr/bin/python3
"""stm_babi_demo.py - does the STM as specified learn bAbI? A small demonstration, not a test.

Trains the sentence-mode STM of docs/MODEL.md (its STM section) with PyTorch on one bAbI task under
the standard protocol (each story from the reset state, a sample per question, the question not
written) and prints validation accuracy per epoch. The forward here is a batched transcription of
the same equations as stm_torch.py (which test_stm_reference.py checks against the numpy reference);
this file checks that the answer module can read what the memories wrote.

Run: /usr/bin/python3 tests/reference/stm_babi_demo.py BABI_DIR [--task 1] [--epochs 3] [--small]
"""

import argparse
import os
import re
import time

import numpy as np
import torch

import stm_reference as ref


def read_task(path):
    """[(story sentences, question, answer)] with tokens as in catbAbI (a final . or ? its own)."""
    out, story = [], []
    for line in open(path):
        nid, text = line.strip().split(" ", 1)
        if int(nid) == 1:
            story = []
        if "\t" in text:
            q, a, _ = text.split("\t")
            out.append((list(story), re.findall(r"[\w,]+|[.?]", q.lower()), a.lower()))
        else:
            story.append(re.findall(r"[\w,]+|[.?]", text.lower()))
    return out


def batched_forward(hp, P, S, n_sent, Q):
    """S [B, T, W] story word ids (0 = padding), n_sent [B], Q [B, W]: answer logits [B, V]."""
    B, T, W = S.shape
    d, nq = hp["memory_size"], hp["query_count"]
    pos = P["stm.position.weight"][:W]
    enc = lambda ids: (P["token_embd.weight"][ids] * pos * (ids > 0)[..., None]).sum(-2)  # noqa: E731
    X = enc(S)
    Mi = P["stm.item.init"].expand(B, d, d)
    Mr = P["stm.relation.init"].reshape(nq, d, d).expand(B, nq, d, d)
    al = P["stm.alpha"]
    for t in range(T):
        x = X[:, t]
        a = x @ P["stm.write.weight"].t() + P["stm.write.bias"]
        c = x @ P["stm.value.weight"].t() + P["stm.value.bias"]
        z = torch.softmax(x @ P["stm.select.weight"].t() + P["stm.select.bias"], -1)
        g = (a @ P["stm.gate.input"].t())[:, None] + torch.tanh(Mi) @ P["stm.gate.memory"].t() + P["stm.gate.bias"]
        Mi1 = torch.sigmoid(g[..., :d]) * torch.tanh(a[:, :, None] * a[:, None, :]) + torch.sigmoid(g[..., d:]) * Mi
        vr = torch.einsum("bs,be,bsef->bf", z, c, Mr)
        A = Mi1 + al[1] * vr[:, :, None] * c[:, None, :]
        Pm = (A @ P["stm.sam.weight"].t() + P["stm.sam.bias"]).transpose(1, 2)
        m = Pm.mean((1, 2), keepdim=True)
        Pm = (Pm - m) / torch.sqrt(((Pm - m) ** 2).mean((1, 2), keepdim=True) + hp["sam_norm_eps"])
        Pm = Pm * P["stm.sam.norm.weight"] + P["stm.sam.norm.bias"]
        q, k, v = Pm[:, :nq], Pm[:, nq:2 * nq], Pm[:, 2 * nq:]
        Sx = torch.einsum("bsjf,bjg->bsfg", torch.tanh(q[:, :, None] * k[:, None]), v)
        Tr = Sx.permute(0, 3, 1, 2).reshape(B, d, nq * d) @ P["stm.transfer.weight"].t() + P["stm.transfer.bias"]
        live = (t < n_sent).to(x.dtype)
        Mi = torch.where(live[:, None, None] > 0, Mi1 + al[2] * Tr, Mi)
        Mr = torch.where(live[:, None, None, None] > 0, al[0] * Mr + Sx, Mr)
    qv = enc(Q)

    def mlp(pre):
        h = torch.tanh(qv @ P[pre + ".weight1"].t() + P[pre + ".bias1"])
        return torch.tanh(h @ P[pre + ".weight2"].t() + P[pre + ".bias2"])
    e, total, nrm = mlp("stm.answer.entity"), 0, P["stm.answer.norm"]
    for kk in range(3):
        r = mlp(f"stm.answer.role.{kk}")
        y = torch.einsum("be,br,bref->bf", e, r, Mr)
        m = y.mean(-1, keepdim=True)
        e = (y - m) / torch.sqrt(((y - m) ** 2).mean(-1, keepdim=True) + hp["answer_norm_eps"]) * nrm[2 * kk] + nrm[2 * kk + 1]
        total = total + e
    return total @ P["output.weight"].t()


def tensorise(samples, w2i, W, T):
    S = np.zeros((len(samples), T, W), dtype=np.int64)
    Q = np.zeros((len(samples), W), dtype=np.int64)
    n = np.zeros(len(samples), dtype=np.int64)
    A = np.zeros(len(samples), dtype=np.int64)
    for i, (story, q, a) in enumerate(samples):
        story = story[-T:]
        n[i] = len(story)
        for j, s in enumerate(story):
            S[i, j, :len(s)] = [w2i[w] for w in s[:W]]
        Q[i, :len(q)] = [w2i[w] for w in q[:W]]
        A[i] = w2i[a]
    return torch.tensor(S), torch.tensor(n), torch.tensor(Q), torch.tensor(A)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("babi_dir")
    ap.add_argument("--task", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train", type=int, default=2000, help="training samples used")
    ap.add_argument("--small", action="store_true", help="d 30, n_q 6 instead of the paper's sizes")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()
    torch.manual_seed(0)
    d = os.path.join(args.babi_dir, "en-valid-10k")
    tr = read_task(os.path.join(d, f"qa{args.task}_train.txt"))[: args.train]
    va = read_task(os.path.join(d, f"qa{args.task}_valid.txt"))[:500]
    words = ["<pad>", "<eos>"] + sorted({w for s, q, a in tr + va for x in s + [q, [a]] for w in x})
    w2i = {w: i for i, w in enumerate(words)}
    over = dict(vocab_size=len(words), statement_end_token_id=w2i["."], question_end_token_id=w2i["?"])
    if args.small:
        over.update(memory_size=30, query_count=6, answer_hidden=40)
    hp = ref.default_hparams(**over)
    rng = np.random.default_rng(0)
    P = {k: torch.tensor(v, requires_grad=True) for k, v in ref.init_params(hp, rng).items()}
    frozen = {"output.weight"}  # the authors' code never trains Z
    opt = torch.optim.Adam([v for k, v in P.items() if k not in frozen], lr=args.lr, betas=(0.9, 0.99))
    T = max(len(s) for s, _, _ in tr + va)
    trd, vad = tensorise(tr, w2i, 16, T), tensorise(va, w2i, 16, T)
    for ep in range(args.epochs):
        t0 = time.time()
        perm = torch.randperm(len(tr))
        for i in range(0, len(tr), 32):
            idx = perm[i:i + 32]
            logits = batched_forward(hp, P, trd[0][idx], trd[1][idx], trd[2][idx])
            loss = torch.nn.functional.cross_entropy(logits, trd[3][idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(P.values()), 5.0)
            opt.step()
        with torch.no_grad():
            acc = (batched_forward(hp, P, *vad[:3]).argmax(-1) == vad[3]).double().mean().item()
        print(f"epoch {ep + 1}: loss {loss.item():.3f}, validation accuracy {acc:.3f} ({time.time() - t0:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
