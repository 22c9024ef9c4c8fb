#!/usr/bin/python3
"""stm_torch.py - the STM's forward in PyTorch (float64), a second implementation of
docs/MODEL.md's STM section for autograd gradients. Written from the spec, not from stm_reference.py;
test_stm_reference.py checks the two against each other. One lane, token by token.
"""

import torch

from stm_reference import tensor_list, SENTENCE


def to_torch(params, requires_grad=False):
    return {k: torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad)
            for k, v in params.items()}


def _ln(x, g, b, eps):
    m = x.mean()
    return (x - m) / torch.sqrt(((x - m) ** 2).mean() + eps) * g + b


def _step(hp, P, Mi, Mr, x):
    d, nq = hp["memory_size"], hp["query_count"]
    al = P["stm.alpha"]
    a = P["stm.write.weight"] @ x + P["stm.write.bias"]
    c = P["stm.value.weight"] @ x + P["stm.value.bias"]
    z = torch.softmax(P["stm.select.weight"] @ x + P["stm.select.bias"], dim=0)
    g = P["stm.gate.input"] @ a + torch.tanh(Mi) @ P["stm.gate.memory"].t() + P["stm.gate.bias"]
    Mi1 = torch.sigmoid(g[:, :d]) * torch.tanh(torch.outer(a, a)) + torch.sigmoid(g[:, d:]) * Mi
    vr = (z[:, None, None] * c[None, :, None] * Mr).sum((0, 1))
    A = Mi1 + al[1] * torch.outer(vr, c)
    Pm = _ln((A @ P["stm.sam.weight"].t() + P["stm.sam.bias"]).t(), P["stm.sam.norm.weight"],
             P["stm.sam.norm.bias"], hp["sam_norm_eps"])
    q, k, v = Pm[:nq], Pm[nq:2 * nq], Pm[2 * nq:]
    S = torch.stack([torch.tanh(q[s][None, :] * k).t() @ v for s in range(nq)])
    flat = S.permute(2, 0, 1).reshape(d, nq * d)          # [b, (s, a)]
    T = flat @ P["stm.transfer.weight"].t() + P["stm.transfer.bias"]
    return Mi1 + al[2] * T, al[0] * Mr + S


def _encode(hp, P, words):
    s = torch.zeros(hp["embedding_length"], dtype=torch.float64)
    for k, w in enumerate(words[: hp["sentence_length"]]):
        s = s + P["token_embd.weight"][w] * P["stm.position.weight"][k]
    return s


def _answer(hp, P, q, Mr):
    def mlp(pre):
        return torch.tanh(P[pre + ".weight2"] @ torch.tanh(P[pre + ".weight1"] @ q + P[pre + ".bias1"])
                          + P[pre + ".bias2"])
    e, total, n = mlp("stm.answer.entity"), 0, P["stm.answer.norm"]
    for k in range(3):
        r = mlp(f"stm.answer.role.{k}")
        e = _ln(torch.einsum("e,r,ref->f", e, r, Mr), n[2 * k], n[2 * k + 1], hp["answer_norm_eps"])
        total = total + e
    return P["output.weight"] @ total


def forward(hp, P, tokens):
    """(outputs, Mi, Mr) as stm_reference.forward from the reset state."""
    d, nq = hp["memory_size"], hp["query_count"]

    def reset():
        return P["stm.item.init"], P["stm.relation.init"].reshape(nq, d, d)
    Mi, Mr = reset()
    buf, slot, outs = [], False, []
    for t in tokens:
        t = int(t)
        if hp["reset_on_eos"] and t == hp["eos_token_id"]:
            Mi, Mr = reset()
            buf, slot = [], False
            if hp["input_mode"] == SENTENCE:
                outs.append(None)
                continue
        if hp["input_mode"] != SENTENCE:
            Mi, Mr = _step(hp, P, Mi, Mr, P["token_embd.weight"][t])
            r = Mr.reshape(nq, d * d) @ P["stm.distill.weight"].t() + P["stm.distill.bias"]
            outs.append(P["output.weight"] @ r.reshape(-1) + P["output.bias"])
            continue
        if slot:
            slot = False
            outs.append(None)
            continue
        if len(buf) < hp["sentence_length"]:
            buf.append(t)
        if t == hp["statement_end_token_id"]:
            Mi, Mr = _step(hp, P, Mi, Mr, _encode(hp, P, buf))
            buf = []
            outs.append(None)
        elif t == hp["question_end_token_id"]:
            outs.append(_answer(hp, P, _encode(hp, P, buf), Mr))
            buf, slot = [], True
        else:
            outs.append(None)
    return outs, Mi, Mr


def gradients(hp, params, tokens, targets):
    """Gradients of the summed cross-entropy of every output against its target (targets[i] for
    the i-th token that produced an output), for every tensor of the list."""
    P = to_torch(params, requires_grad=True)
    outs, _, _ = forward(hp, P, tokens)
    logits = torch.stack([o for o in outs if o is not None])
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(targets), reduction="sum")
    loss.backward()
    return float(loss), {n: P[n].grad.numpy().copy() for n, _ in tensor_list(hp)}
