import sys, time
import numpy as np
sys.path.insert(0, "/work/wt-researcher/benchmarks")
from bench_semantic import planted_clusters
from spherecodes.semantic import assign_by_embeddings, privileged, semantic_agreement
from spherecodes.solvers import tammes
from spherecodes.stats import max_cos

k, d = 48, 5
for size in (4, 6, 8, 12, 3, 2):
    e = planted_clusters(k, size)
    t = tammes(d, k, seed=0, device="cpu", time_limit=60)
    a = assign_by_embeddings(t.prototypes, e)
    p0 = t.prototypes[np.argsort(a.order)]
    pr = privileged(d, k, e, seed=0, device="cpu")
    print(size, "tammes", round(t.max_cos, 4), "assign", round(semantic_agreement(p0, e)["triplet_agreement"], 3),
          "priv", round(pr.max_cos, 4), round(semantic_agreement(pr.prototypes, e)["triplet_agreement"], 3), flush=True)
