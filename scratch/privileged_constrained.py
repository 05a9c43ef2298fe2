"""Prototype: privileged starting from tammes + assign, keeping max-cos within a tolerance."""
import sys, time
import numpy as np
import torch
from spherecodes.semantic import (assign_by_embeddings, semantic_agreement, RankingTriplets,
                                  privileged_information_loss, privileged)
from spherecodes import solvers
from spherecodes.solvers import tammes
from spherecodes.stats import max_cos


def planted(k, size, m=50, seed=1, noise=0.35):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((k // size, m))
    e = c[np.arange(k) // size] + noise * rng.standard_normal((k, m))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def refine(p0, e, tolerance, *, steps=1000, lr=1e-2, seed=0, check_every=25):
    """Descend on L_PI from p0 with a quadratic hinge on pairs above cap - tolerance/4;
    keep the checkpoint of best agreement among those with max-cos <= max-cos(p0) + tolerance."""
    k, d = p0.shape
    cap = max_cos(p0) + tolerance
    target = cap - 0.25 * tolerance
    ranking = RankingTriplets(e, "auto", seed=seed)
    agree0 = semantic_agreement(p0, e, seed=seed)["triplet_agreement"]
    best = (agree0, p0, 0)
    eye2 = 2 * torch.eye(k, dtype=torch.float64)
    adam = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    x = torch.tensor(p0, dtype=torch.float64)
    m1, m2 = torch.zeros_like(x), torch.zeros_like(x)
    for step in range(steps):
        leaf = x.detach().requires_grad_(True)
        gram = leaf @ leaf.T
        loss = privileged_information_loss(gram, *ranking.batch()) \
            + 1e3 * (torch.relu(gram - eye2 - target) ** 2).sum() / k
        (g,) = torch.autograd.grad(loss, leaf)
        solvers._riemannian_adam_step(x, g, m1, m2, step, lr * 0.01 ** (step / (steps - 1)), adam)
        if (step + 1) % check_every == 0:
            w = solvers._normalise_rows(x.numpy().copy())
            if max_cos(w) <= cap:
                a = semantic_agreement(w, e, seed=seed)["triplet_agreement"]
                if a > best[0]:
                    best = (a, w, step + 1)
    return best, agree0


if __name__ == "__main__":
    k, d, size = (int(a) for a in sys.argv[1:4])
    tl = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    e = planted(k, size)
    t0 = time.perf_counter()
    t = tammes(d, k, seed=0, device="cpu", time_limit=tl)
    a = assign_by_embeddings(t.prototypes, e)
    p0 = t.prototypes[np.argsort(a.order)]
    print(f"tammes {t.max_cos:.4f} ({time.perf_counter()-t0:.0f}s, {t.stop_reason}); assign agreement "
          f"{semantic_agreement(p0, e)['triplet_agreement']:.3f}", flush=True)
    for w in (1.0,):
        pr = privileged(d, k, e, seed=0, device="cpu", semantic_weight=w)
        print(f"old privileged w={w}: max-cos {pr.max_cos:.4f} agreement "
              f"{semantic_agreement(pr.prototypes, e)['triplet_agreement']:.3f}", flush=True)
    for tol in (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2):
        s = time.perf_counter()
        (agree, w, at), agree0 = refine(p0, e, tol)
        print(f"tol {tol}: max-cos {max_cos(w):.4f} agreement {agree:.3f} (start {agree0:.3f}, best at step {at}, "
              f"{time.perf_counter()-s:.1f}s)", flush=True)
