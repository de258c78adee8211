#!/usr/bin/env python3
"""The Python prototype of the token-bucket shaped link (docs/tuning.md, "A token-bucket shaped link").

A port of tuner/{predict,schedule_terms}.hpp for allreduce on namespace hosts (it reproduces
tutti-model-check's predictions to 1e-4), the link's steps (tuner/shaped_link.hpp), and the fit by
regimes (tuner/fit_shaped.hpp), with the variants of the docs' table. Node parameters: the morning
shm table's fit as tutti-model-check prints it. Run from the repository root:
  nice -n 19 python3 bench/results/model-shaped-20261127/prototype.py
numpy only. The C++ is what counts; this is how its form was chosen."""
import math
import json

import numpy as np

def nnls(A, b, maxiter=None):
    m, n = A.shape; x = np.zeros(n); P = np.zeros(n, bool)
    for _ in range(3 * n):
        w = A.T @ (b - A @ x)
        cand = np.where(~P & (w > 1e-12))[0]
        if len(cand) == 0: break
        P[cand[np.argmax(w[cand])]] = True
        for _ in range(n + 1):
            z = np.zeros(n); z[P] = np.linalg.lstsq(A[:, P], b, rcond=None)[0]
            if (z[P] > 0).all(): x = z; break
            neg = P & (z <= 0); alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x); P &= x > 1e-15; x[~P] = 0
    return x, np.linalg.norm(A @ x - b)
C = 512 * 1024          # chunk
K = 1 << 20             # shm stage
ONE_SHOT = 32 << 10
KEYS = ['a_intra', 'b_intra', 'a_inter', 'b_inter', 'g', 's', 'm', 'e', 'c']

def T(**kw):
    t = dict.fromkeys(KEYS, 0.0); t.update(kw); return t
def add(a, b): return {k: a[k] + b[k] for k in KEYS}
def mul(a, x): return {k: a[k] * x for k in KEYS}
def on(lvl, msgs, by, red):
    return T(**({'a_intra': msgs, 'b_intra': by} if lvl == 'intra' else {'a_inter': msgs, 'b_inter': by}), g=red)
def rounds_of(b, u): return max(1.0, math.ceil(b / max(1.0, u)))
def bit_floor(n): return 1 << (n.bit_length() - 1)

class Shape:
    def __init__(s, ranks, per_node, noc, shaped, links=1):
        s.ranks, s.per_node, s.noc, s.shaped, s.links = ranks, per_node, noc, shaped, links
    def cpu_bytes(s): return s.noc and not s.shaped
    def one_node(s): return s.per_node >= s.ranks
    def lvl(s): return 'intra' if s.one_node() else 'inter'
    def crowd(s): return 1 if s.cpu_bytes() else max(1.0, s.per_node / max(1.0, s.links))

def crowded(t, c): t = dict(t); t['b_inter'] *= c; return t

def on_levels(sh, crossing, msgs, by, red):
    if sh.one_node() or not sh.noc: return on(sh.lvl(), msgs, by, red)
    cb = sh.cpu_bytes()
    t = on('inter', crossing * msgs, crossing * by if cb else by, red)
    t['a_intra'] = (1 - crossing) * msgs; t['b_intra'] = (1 - crossing) * by if cb else 0
    return t

def tree_crossing(sh):
    p = bit_floor(sh.ranks); D = math.floor(math.log2(sh.ranks)); s = 0; h = p / 2
    while h >= 1: s += min(1.0, h / max(1, sh.per_node)); h /= 2
    return s / D if D > 0 else 1

def ring(c, sh, S):
    n = sh.ranks; f = (n - 1) / n; r = rounds_of(S / n, C)
    cr = 0.5 if sh.per_node >= 2 else 1
    if c == 'allreduce': return on_levels(sh, cr, 2 * (n - 1) * r, 2 * f * S, f * S)
    if c == 'reduce_scatter': return on_levels(sh, cr, (n - 1) * r, f * S, f * S)
    if c == 'allgather': return on_levels(sh, cr, (n - 1) * r, f * S, 0)

def hd(c, sh, S):
    assert c == 'allreduce'
    n = sh.ranks; p = bit_floor(n); fold = p != n
    pair = 'intra' if sh.one_node() or sh.per_node >= 2 else 'inter'
    r = rounds_of(S, p * C); sl = S / r
    t = T(); moved = sl; m = p // 2
    while m >= 1:
        moved /= 2
        inter = (not sh.one_node()) and m * n / p >= sh.per_node
        t = add(t, crowded(on('inter' if inter else 'intra', 2, 2 * moved, moved), sh.crowd() if inter else 1))
        m //= 2
    if fold: t = add(t, on(pair, 2, 2 * sl, sl))
    return mul(t, r)

def tree(c, sh, S):
    assert c == 'allreduce'
    n = sh.ranks; D = math.floor(math.log2(n)); k = rounds_of(S / 2, C)
    one = S <= 64; trees = 1 if one else 2; tk = rounds_of(S, C) if one else k; tc = S / trees / tk
    sends = min(n - 1, 3) if one else min(n, 4); reduces = min(n - 1, 2)
    t = on_levels(sh, tree_crossing(sh), trees * (2 * D + tk - 1), sends * tc * (tk - 1) + trees * D * tc, reduces * tc * (tk + D - 1))
    t['a_inter'] /= trees
    return t

def direct(c, sh, S):
    n = sh.ranks; f = (n - 1) / n; ep = rounds_of(S, K)
    if c == 'allreduce':
        t = on('intra', 1, S + (n - 1) * S, (n - 1) * S) if (S <= ONE_SHOT and S <= K) else on('intra', 2 * ep + 1, S + 2 * f * S, f * S)
    elif c == 'reduce_scatter': t = on('intra', ep + 1, 2 * f * S, f * S)
    elif c == 'allgather': t = on('intra', rounds_of(S / n, K) + 1, S, 0)
    return T(e=t['a_intra'], b_intra=t['b_intra'] / 2, g=t['g'])

FLAT = {'ring': ring, 'halving_doubling': hd, 'tree': tree, 'direct': direct}

def sched(alg, c, world, nodes, q, S, noc, shaped):
    if alg in FLAT:
        sh = Shape(world, q, noc, shaped)
        if world == 1: return T()
        return FLAT[alg](c, sh, S)
    inner, outer = alg[len('hierarchical<'):-1].split(', ')
    assert c == 'allreduce'
    count = math.floor(S / 4); body = math.floor(count / q) * q * 4; assert body == S
    rs = sched(inner, 'reduce_scatter', q, 1, q, S, noc, shaped)
    x = sched(outer, 'allreduce', nodes, nodes, 1, S / q, noc, shaped)
    ag = sched(inner, 'allgather', q, 1, q, S, noc, shaped)
    return add(add(rs, crowded(x, Shape(world, q, noc, shaped).crowd())), ag)

def check_terms(alg, world, nodes, q):
    near = min(world, q) - 1; far = world - 1 - near
    t = on('inter', far, 32 * far, 0); t['a_intra'] = near; t['b_intra'] = 32 * near; return t

def terms_of(alg, world, nodes, q, S, machine_cores=2, cache_bytes=2 << 20, noc=True, shaped=False):
    t = add(sched(alg, 'allreduce', world, nodes, q, S, noc, shaped), check_terms(alg, world, nodes, q))
    t['c'] += 1
    cores = machine_cores / nodes
    busy = bit_floor(q) if alg == 'halving_doubling' else q
    cache = cache_bytes * cores / busy if busy > cores else cache_bytes
    # spilled
    t['m'] += (t['b_intra'] + t['g'] + (t['b_inter'] if noc and not shaped else 0)) * max(0, 1 - cache / (3 * S))
    # oversubscribed
    if q > cores:
        o = q / cores; ob = max(1.0, busy / cores)
        t['s'] += (t['a_intra'] + t['a_inter'] + t['e']) * (1 - 1 / o)
        for k in ('a_intra', 'e', 'c'): t[k] *= o
        for k in ('b_intra', 'g', 'm'): t[k] *= ob
        if noc: t['a_inter'] *= o
        if noc and not shaped: t['b_inter'] *= ob
    return t

NODE = dict(a_intra=2.18e-07, b_intra=1.693e-10, g=0, e=1.4e-07, c=5.344e-07, s=1.946e-06, m=6.299e-11)
def secs(p, t): return sum(p.get(k, 0) * t[k] for k in KEYS)

def load(path, coll='allreduce'):
    d = json.load(open(path))
    return [s for s in d['samples'] if s['collective'] == coll and s['dtype_class'] == 'float' and s['median_us'] > 0]
BUCKET = 131072.0

def kind_of(alg):
    inter = alg[len('hierarchical<'):-1].split(', ')[1] if alg.startswith('hier') else alg
    return 'x' if inter in ('halving_doubling', 'tree') else '1'

def link_steps(alg, world, nodes, q, S, flows=1):
    """(bytes through the busiest host's outgoing link in one step, how many such steps)."""
    if alg.startswith('hier'):
        inner, outer = alg[len('hierarchical<'):-1].split(', ')
        return link_steps(outer, nodes, nodes, 1, S / q, flows * q)
    n = world
    if alg == 'ring':
        r = rounds_of(S / n, C); return [(flows * S / n / r, 2 * (n - 1) * r)]
    if alg == 'halving_doubling':
        p = bit_floor(n); r = rounds_of(S, p * C); moved = S / r; m = p // 2; out = []
        while m >= 1:
            moved /= 2
            if m * n / p >= q: out.append((flows * q * moved, 2 * r))
            m //= 2
        return out
    if alg == 'tree':
        D = math.floor(math.log2(n)); k = rounds_of(S / 2, C); one = S <= 64
        trees = 1 if one else 2; tk = rounds_of(S, C) if one else k; tc = S / trees / tk
        sends = min(n - 1, 3) if one else min(n, 4)
        return [(flows * sends * tc, tk - 1), (flows * trees * tc, D)]
    raise ValueError(alg)

def link_cols(alg, world, nodes, q, S, bucket=BUCKET):
    """within-bucket bytes, beyond-bucket bytes (ring-like), beyond-bucket bytes (exchange)."""
    w = b = 0.0
    for M, cnt in link_steps(alg, world, nodes, q, S):
        w += cnt * min(M, bucket); b += cnt * max(0.0, M - bucket)
    return (w, b, 0.0) if kind_of(alg) == '1' else (w, 0.0, b)

def build(samples, bucket=BUCKET):
    rows = []
    for s in samples:
        t = terms_of(s['algorithm'], s['world'], s['nodes'], s['ranks_per_node'], s['bytes'], noc=True, shaped=False)
        held = secs(NODE, t)
        rows.append(dict(s=s, t=t, held=held, cpu=np.array([t['a_inter'], t['b_inter']]),
                         link=np.array(link_cols(s['algorithm'], s['world'], s['nodes'], s['ranks_per_node'], s['bytes'], bucket)),
                         y=s['median_us'] * 1e-6))
    return rows

def nnls_rel(A, b, y):
    A = A / y[:, None]; b = b / y
    used = np.abs(A).sum(0) > 0
    x = np.zeros(A.shape[1])
    if used.any():
        As = A[:, used]; nr = np.linalg.norm(As, axis=0); xs, _ = nnls(As / nr, b); x[used] = xs / nr
    return x

def predict(r, x, z, mode):
    tc = r['held'] + r['cpu'] @ x
    tl = r['link'] @ z
    return max(tc, tl) if mode == 'max' else tc + tl

def fit(rows, link_mask=(1, 1, 1), iters=50):
    mask = np.array(link_mask, float)
    # start: cpu on all, link on all
    Y = np.array([r['y'] for r in rows])
    A = np.array([r['cpu'] for r in rows]); B = np.array([r['y'] - r['held'] for r in rows])
    x = nnls_rel(A, B, Y)
    L = np.array([r['link'] * mask for r in rows]); z = nnls_rel(L, Y, Y)
    assign = None; best = None
    for it in range(iters):
        new = [r['link'] @ z > r['held'] + r['cpu'] @ x for r in rows]
        if new == assign: break
        assign = new
        ci = [i for i, a in enumerate(assign) if not a]; li = [i for i, a in enumerate(assign) if a]
        if ci: x = nnls_rel(A[ci], B[ci], Y[ci])
        if li: z = nnls_rel(L[li], Y[li], Y[li])
        err = np.array([predict(r, x, z, 'max') / r['y'] - 1 for r in rows]); rms = math.sqrt((err ** 2).mean())
        if best is None or rms < best[0]: best = (rms, x.copy(), z.copy(), it)
    return best

def report(rows, x, z, label):
    by = {}
    for r in rows:
        e = predict(r, x, z, 'max') / r['y'] - 1
        by.setdefault('%dx%dx%d' % (r['s']['world'], r['s']['nodes'], r['s']['ranks_per_node']), []).append(e)
    txt = '  '.join('%s rms %.1f%% max %.0f%% in20 %d/%d' % (k, 100 * math.sqrt(np.mean(np.square(v))), 100 * max(map(abs, v)),
                                                      sum(abs(e) <= .2 for e in v), len(v)) for k, v in sorted(by.items()))
    rate = 1 / z[0] / 1e6 if z[0] > 0 else float('nan')
    print('%-28s a_inter %.2f us b_inter %.2f GB/s | r %.1f MB/s eta1 %.3f etax %.3f | %s' % (
        label, x[0] * 1e6, (1e-9 / x[1]) if x[1] > 0 else 0, rate, z[0] / z[1] if z[1] > 0 else float('nan'),
        z[0] / z[2] if z[2] > 0 else float('nan'), txt))

def summed(S):
    """The first model: the shaped link's bytes as b_inter, added to the other terms (alpha_inter, beta_inter fitted)."""
    rows = []
    for s in S:
        t = terms_of(s['algorithm'], 4, s['nodes'], s['ranks_per_node'], s['bytes'], noc=True, shaped=True)
        rows.append((s, secs(NODE, t), np.array([t['a_inter'], t['b_inter']]), s['median_us'] * 1e-6))
    Y = np.array([r[3] for r in rows]); A = np.array([r[2] for r in rows]); B = Y - np.array([r[1] for r in rows])
    x = nnls_rel(A, B, Y)
    by = {}
    for s, h, a, y in rows: by.setdefault(s['nodes'], []).append((h + a @ x) / y - 1)
    print('%-28s a_inter %.2f us b_inter %.3f GB/s | %s' % ('summed link (the first model)', x[0] * 1e6, 1e-9 / x[1], '  '.join(
        '%dx%dx%d rms %.1f%%' % (4, k, 4 // k, 100 * math.sqrt(np.mean(np.square(v)))) for k, v in sorted(by.items()))))


def main():
    for path in ['tuning/vm-2core-20261126/netns-1gbit.json', 'tuning/vm-2core-20261126-evening/netns-1gbit.json']:
        S = [s for s in load(path) if s['algorithm'] != 'eager']
        print(path)
        summed(S)
        for label, f in [('R only', lambda l: [l[0] + l[1] + l[2], 0, 0]), ('R, eta_p (no eta_x)', lambda l: [l[0], l[1] + l[2], 0]),
                         ('R, eta_x (no eta_p)', lambda l: [l[0] + l[1], 0, l[2]]), ('no bucket: one rate per kind', None), ('all three', lambda l: l)]:
            rows = build(S, 0.0 if f is None else BUCKET)
            if f is not None:
                for r in rows: r['link'] = np.array(f(list(r['link'])), float)
            rms, x, z, it = fit(rows); report(rows, x, z, label)


if __name__ == '__main__':
    main()
