"""Fixed prototypes against a learned classifier on scikit-learn's handwritten digits.

The 8×8 digits (1,797 images, 10 classes) ship with scikit-learn, so this runs
offline in a couple of minutes on a laptop CPU.  The same small MLP maps an
image to R^d and is trained either

* towards **fixed prototypes** (spherecodes' code for K = 10 in R^d) with the
  HPN cosine loss, cross-entropy on cosine logits, or dot-regression, or
* into a **learned linear layer** R^d → R^10 with ordinary cross-entropy.

A second experiment makes the training set imbalanced (class k keeps
``n_max · ratio^(k/9)`` images) and compares dot-regression with per-class
lengths ``N/(K n_k)`` against cross-entropy, on the balanced test set.

Run ``python examples/digits.py`` (``--help`` for options); it prints the
markdown tables recorded in ``docs/nn.md``.  Needs scikit-learn
(``pip install spherecodes[examples]``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from spherecodes.constructions import applicable_closed_forms
from spherecodes.run import generate
from spherecodes.nn import (
    CosineCrossEntropyLoss,
    DotRegressionLoss,
    HPNLoss,
    PrototypeClassifier,
)
from spherecodes.nn.digits import load_split, mlp, train  # the split, backbone and loop of the shipped example
from spherecodes.stats import separation_statistics

NUM_CLASSES = 10
FIXED_LOSSES = ("hpn", "ce", "dr")


def make_imbalanced(x: torch.Tensor, y: torch.Tensor, ratio: float, seed: int = 0):
    """Keep ``n_max · ratio^(k/(K−1))`` samples of class k (exponential decay, Yang et al. 2022, App. D)."""
    generator = torch.Generator().manual_seed(seed)
    n_max = int(torch.bincount(y).min())
    keep = []
    for k in range(NUM_CLASSES):
        n_k = max(1, round(n_max * ratio ** (k / (NUM_CLASSES - 1))))
        members = torch.nonzero(y == k).flatten()
        keep.append(members[torch.randperm(len(members), generator=generator)[:n_k]])
    keep = torch.cat(keep)
    return x[keep], y[keep]


def hpn_prototypes(d: int, k: int, seed: int = 0, steps: int = 1000) -> np.ndarray:
    """Mettes et al. (2019)'s own prototype optimiser (Eq. 5) with its settings (SGD, lr 0.01, momentum 0.9).

    Minimises the mean over prototypes of the cosine to the nearest other one,
    re-projecting onto the sphere after each step.  Used here only for sizes
    that have no closed form in :mod:`spherecodes.constructions` (K = 10 in d = 3).
    """
    generator = torch.Generator().manual_seed(seed)
    p = F.normalize(torch.randn(k, d, generator=generator, dtype=torch.float64), dim=1).requires_grad_()
    optimizer = torch.optim.SGD([p], lr=0.01, momentum=0.9)
    self_similarity = 2.0 * torch.eye(k, dtype=torch.float64)  # M = PPᵀ − 2I never selects itself
    for _ in range(steps):
        loss = (p @ p.T - self_similarity).max(dim=1).values.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            p.copy_(F.normalize(p, dim=1))
    return p.detach().numpy()


def fixed_code(d: int) -> np.ndarray:
    """The (10, d) code the fixed heads use: spherecodes' closed form where one exists."""
    if applicable_closed_forms(d, NUM_CLASSES):
        return generate(d=d, k=NUM_CLASSES).prototypes
    return hpn_prototypes(d, NUM_CLASSES)


def fixed_prototype_accuracy(prototypes, loss: str, data, *, epochs: int = 60, seed: int = 0, balance_dr: bool = True) -> float:
    """Test accuracy of the MLP trained towards fixed prototypes, a (10, d) code.

    ``loss`` is ``"hpn"`` (Mettes et al. 2019, Eq. 1), ``"ce"`` (cosine cross-entropy,
    τ = 0.1) or ``"dr"`` (dot-regression; with ``balance_dr`` the class lengths
    are ``N/(K n_k)`` of the training set, which is all ones when balanced).
    """
    x_train, x_test, y_train, y_test = data
    torch.manual_seed(seed)
    head = PrototypeClassifier(prototypes, temperature=0.1)
    criterion = {
        "hpn": lambda: HPNLoss(head),
        "ce": lambda: CosineCrossEntropyLoss(head),
        "dr": lambda: DotRegressionLoss(
            head, class_counts=torch.bincount(y_train, minlength=NUM_CLASSES) if balance_dr else None
        ),
    }[loss]()
    model = train(mlp(head.dim), criterion, x_train, y_train, epochs=epochs, seed=seed)
    with torch.no_grad():
        return (head.predict(model(x_test)) == y_test).float().mean().item()


def learned_linear_accuracy(d: int, data, *, epochs: int = 60, seed: int = 0, class_weighted: bool = False) -> float:
    """Test accuracy of the same MLP followed by a learned linear layer R^d → R^10 and cross-entropy.

    With ``class_weighted`` the loss weights class k by ``N/(K n_k)`` (seed
    004's CE*), the fair imbalanced baseline for dot-regression.
    """
    x_train, x_test, y_train, y_test = data
    torch.manual_seed(seed)
    counts = torch.bincount(y_train, minlength=NUM_CLASSES).float()
    weight = counts.sum() / (NUM_CLASSES * counts) if class_weighted else None
    model = nn.Sequential(mlp(d), nn.Linear(d, NUM_CLASSES))
    train(model, lambda out, y: F.cross_entropy(out, y, weight=weight), x_train, y_train, epochs=epochs, seed=seed)
    with torch.no_grad():
        return (model(x_test).argmax(1) == y_test).float().mean().item()


def summary(accuracies: list[float]) -> str:
    mean = 100 * statistics.mean(accuracies)
    spread = 100 * statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
    return f"{mean:.1f} ± {spread:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", default="3,5,10", help="output dimensions d, comma-separated")
    parser.add_argument("--seeds", type=int, default=3, help="training seeds per cell")
    parser.add_argument("--epochs", type=int, default=60, help="epochs on the balanced set")
    parser.add_argument("--imbalanced-epochs", type=int, default=100, help="epochs on the imbalanced sets")
    parser.add_argument("--ratios", default="0.1,0.02", help="imbalance ratios n_min/n_max")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (tiny model: more rarely help)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dims = [int(d) for d in args.dims.split(",")]
    codes = {d: fixed_code(d) for d in dims}
    seeds = range(args.seeds)
    data = load_split()
    start = time.perf_counter()
    for d, code in codes.items():
        stats = separation_statistics(code)
        print(f"d = {d}: fixed code with max-cos {stats.max_cos:.4f} (min angle {stats.min_angle_deg:.2f}°)")

    print(f"\nBalanced: {len(data[0])} training, {len(data[1])} test images; test accuracy % (mean ± std over {args.seeds} seeds)\n")
    print("| d | fixed + HPN | fixed + CE (τ = 0.1) | fixed + DR | learned linear + CE |")
    print("|---|---|---|---|---|")
    for d in dims:
        cells = [summary([fixed_prototype_accuracy(codes[d], loss, data, epochs=args.epochs, seed=s) for s in seeds]) for loss in FIXED_LOSSES]
        cells.append(summary([learned_linear_accuracy(d, data, epochs=args.epochs, seed=s) for s in seeds]))
        print(f"| {d} | " + " | ".join(cells) + " |", flush=True)

    print("\nImbalanced training set, balanced test set; test accuracy %\n")
    print("| ratio | n_k | d | fixed + DR (N/(K n_k)) | fixed + DR (unweighted) | fixed + CE | learned + CE | learned + weighted CE |")
    print("|---|---|---|---|---|---|---|---|")
    for ratio in (float(r) for r in args.ratios.split(",")):
        x_small, y_small = make_imbalanced(data[0], data[2], ratio)
        imbalanced = (x_small, data[1], y_small, data[3])
        counts = "/".join(str(n) for n in torch.bincount(y_small).tolist())
        epochs = args.imbalanced_epochs
        for d in dims:
            cells = [
                summary([fixed_prototype_accuracy(codes[d], "dr", imbalanced, epochs=epochs, seed=s) for s in seeds]),
                summary([fixed_prototype_accuracy(codes[d], "dr", imbalanced, epochs=epochs, seed=s, balance_dr=False) for s in seeds]),
                summary([fixed_prototype_accuracy(codes[d], "ce", imbalanced, epochs=epochs, seed=s) for s in seeds]),
                summary([learned_linear_accuracy(d, imbalanced, epochs=epochs, seed=s) for s in seeds]),
                summary([learned_linear_accuracy(d, imbalanced, epochs=epochs, seed=s, class_weighted=True) for s in seeds]),
            ]
            print(f"| {ratio} | {counts} | {d} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s on {torch.get_num_threads()} CPU thread(s)")


if __name__ == "__main__":
    main()
