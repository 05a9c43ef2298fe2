import sys
import numpy as np
from spherecodes.semantic import assign_by_embeddings, privileged, semantic_agreement
from spherecodes.solvers import tammes

def planted(k, size, m, seed, noise=0.35):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((k // size, m))
    e = c[np.arange(k) // size] + noise * rng.standard_normal((k, m))
    return e / np.linalg.norm(e, axis=1, keepdims=True)

k, d = 48, 5
t = tammes(d, k, seed=0, device="cpu", time_limit=60)
for m in (50, 300, 16):
    for seed in (0, 1, 2):
        for size in (4, 6, 8, 12, 16):
            e = planted(k, size, m, seed)
            a = assign_by_embeddings(t.prototypes, e)
            ag = semantic_agreement(t.prototypes[np.argsort(a.order)], e)["triplet_agreement"]
            if abs(ag - 0.668) < 0.004:
                pr = privileged(d, k, e, seed=0, device="cpu")
                print(m, seed, size, "assign", round(ag, 3), "priv", round(pr.max_cos, 4),
                      round(semantic_agreement(pr.prototypes, e)["triplet_agreement"], 3), flush=True)
