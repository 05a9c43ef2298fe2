"""Kobayashi's direct-sum approach with fixed prototypes, on scikit-learn's handwritten digits.

The 8×8 digits ship with scikit-learn, so this runs offline from any directory::

    python -m spherecodes.nn.digits                 # the tables of docs/nn.md
    python -m spherecodes.nn.digits --bank digits.h5 --code etf-d32-k10

A small MLP ending in a linear layer is trained with N-way K-shot batches
towards a bank's fixed prototypes with each loss of :data:`LOSSES` (cosine
cross-entropy, its plain sum with the Proto loss, :class:`DirectSumLoss`,
:class:`SpectralSumLoss`), for test accuracy on the 10 classes and for
few-shot transfer to unseen digits; ``docs/nn.md`` describes the experiments
and their results.  Needs scikit-learn (``pip install spherecodes[examples]``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn

from ..errors import SpherecodesError
from .direct_sum import DEFAULT_P, DirectSumLoss, ProtoLoss, SpectralSumLoss
from .heads import PrototypeClassifier
from .losses import CosineCrossEntropyLoss
from .sampling import NWayKShotSampler

__all__ = ["LOSSES", "few_shot_accuracy", "load_split", "make_criterion", "mlp", "run", "train"]

#: The losses compared, in table order: cosine cross-entropy (τ = 0.1), ``CE(z) + Proto(z)``,
#: ``CE(P z) + Proto((I − P) z)`` and ``CE((I − Q_p) z) + Proto(Q_p z)``, p = 0.3.
LOSSES = ("ce", "sum", "direct", "spectral")

#: Classes seen in training for the few-shot experiment, and the unseen ones it is tested on.
BASE_CLASSES, NOVEL_CLASSES = tuple(range(7)), (7, 8, 9)


def load_split(seed: int = 0, test_size: float = 0.3, classes=None):
    """Stratified train/test split of the digits (of ``classes`` only, relabelled 0, 1, ...), pixels in [0, 1]."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SpherecodesError("the digits examples need scikit-learn: pip install spherecodes[examples]") from None
    x, y = load_digits(return_X_y=True)
    if classes is not None:
        keep = np.isin(y, classes)
        x, y = x[keep], np.searchsorted(np.asarray(classes), y[keep])
    x_train, x_test, y_train, y_test = train_test_split(
        x / 16.0, y, test_size=test_size, stratify=y, random_state=seed
    )
    as_tensors = (torch.tensor(a, dtype=torch.float32) for a in (x_train, x_test))
    return (*as_tensors, torch.tensor(y_train), torch.tensor(y_test))


def mlp(d: int, relu_last: bool = False) -> nn.Module:
    """The backbone: 64 pixels → 128 → 128 → R^d, ending in a linear layer (or, to show why not, a ReLU)."""
    layers = [nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, d)]
    return nn.Sequential(*layers, *([nn.ReLU()] if relu_last else []))


def train(model: nn.Module, criterion, x, y, *, epochs: int, seed: int, batch_size: int = 64,
          sampler: NWayKShotSampler | None = None) -> nn.Module:
    """Adam (lr 1e-3), reproducible from ``seed``: shuffled mini-batches, or the batches of ``sampler``."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
            batches = (torch.tensor(batch) for batch in sampler)
        else:
            order = torch.randperm(len(x), generator=generator)
            batches = (order[start : start + batch_size] for start in range(0, len(x), batch_size))
        for batch in batches:
            loss = criterion(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model


def make_criterion(loss: str, head: PrototypeClassifier, p: float = DEFAULT_P):
    """The training loss ``loss`` (one of :data:`LOSSES`) for a head of fixed prototypes."""
    ce, proto = CosineCrossEntropyLoss(head), ProtoLoss()
    if loss == "ce":
        return ce
    if loss == "sum":
        return lambda z, y: ce(z, y) + proto(z, y)
    if loss == "direct":
        return DirectSumLoss(ce, proto)
    if loss == "spectral":
        return SpectralSumLoss(ce, proto, p=p)
    raise SpherecodesError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")


def few_shot_accuracy(features: torch.Tensor, labels: torch.Tensor, *, shots: int = 5, episodes: int = 300,
                      seed: int = 0) -> float:
    """Mean accuracy of nearest-class-mean classification over episodes of all the classes in ``labels``.

    Each episode draws ``shots`` support examples per class (stream (seed, episode)), takes their mean
    feature as the class's centre, and classifies every other example by the nearest centre (Euclidean).
    """
    classes = torch.unique(labels)
    members = [torch.nonzero(labels == c).flatten() for c in classes]
    correct = total = 0
    for episode in range(episodes):
        rng = np.random.default_rng([seed, episode])
        support = [m[torch.as_tensor(rng.choice(len(m), size=shots, replace=False))] for m in members]
        centres = torch.stack([features[s].mean(0) for s in support])
        query = torch.ones(len(labels), dtype=torch.bool)
        query[torch.cat(support)] = False
        guess = torch.cdist(features[query], centres).argmin(1)
        correct += int((classes[guess] == labels[query]).sum())
        total += int(query.sum())
    return correct / total


def run(prototypes, loss: str, data, *, seed: int, epochs: int, n_way: int, k_shot: int, relu_last: bool = False,
        novel=None) -> float:
    """Train once; the test accuracy of the head, or with ``novel`` (features, labels of unseen classes' images)
    the few-shot accuracy on them."""
    x_train, x_test, y_train, y_test = data
    torch.manual_seed(seed)
    head = PrototypeClassifier(prototypes, temperature=0.1)
    model = mlp(head.dim, relu_last)
    sampler = NWayKShotSampler(y_train, n_way=n_way, k_shot=k_shot, seed=seed)
    train(model, make_criterion(loss, head), x_train, y_train, epochs=epochs, seed=seed, sampler=sampler)
    with torch.no_grad():
        if novel is not None:
            return few_shot_accuracy(model(novel[0]), novel[1], seed=seed)
        return (head.predict(model(x_test)) == y_test).float().mean().item()


def summary(accuracies: list[float]) -> str:
    """``mean ± std`` in percent (sample standard deviation)."""
    mean = 100 * statistics.mean(accuracies)
    spread = 100 * statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
    return f"{mean:.1f} ± {spread:.1f}"


def _code(bank, name, d: int, k: int):
    from ..bank import read_code
    from ..run import generate

    code = read_code(bank, name) if bank else generate(d=d, k=k)
    if code.k != k:
        raise SpherecodesError(f"the digits need a code of {k} prototypes; {code.name} has {code.k}")
    return code


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m spherecodes.nn.digits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", default="32,8", help="output dimensions d, comma-separated (codes from generate)")
    parser.add_argument("--bank", default=None, help="take the 10-class code from this bank instead (one d)")
    parser.add_argument("--code", default=None, help="with --bank: the code's name")
    parser.add_argument("--seeds", type=int, default=5, help="training seeds per cell")
    parser.add_argument("--epochs", type=int, default=40, help="epochs (each about as many images as the set)")
    parser.add_argument("--shots", type=int, default=6, help="K of the N-way K-shot batches (N = all classes)")
    parser.add_argument("--few-shot", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the few-shot transfer to unseen digits (at the first d)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (tiny model: more rarely help)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    dims = [int(d) for d in args.dims.split(",")]
    codes = [_code(args.bank, args.code, d, 10) for d in ([None] if args.bank else dims)]
    seeds = range(args.seeds)
    data = load_split()
    start = time.perf_counter()
    print(f"{len(data[0])} training, {len(data[1])} test images; 10-way {args.shots}-shot batches, {args.epochs} "
          f"epochs; test accuracy % (mean ± std over {args.seeds} seeds)\n")
    print("| code | " + " | ".join(f"fixed + {loss}" for loss in LOSSES) + " | CE, backbone ending in ReLU |")
    print("|---" * (len(LOSSES) + 2) + "|")
    for code in codes:
        cells = [summary([run(code, loss, data, seed=s, epochs=args.epochs, n_way=10, k_shot=args.shots)
                          for s in seeds]) for loss in LOSSES]
        cells.append(summary([run(code, "ce", data, seed=s, epochs=args.epochs, n_way=10, k_shot=args.shots,
                                  relu_last=True) for s in seeds]))
        print(f"| {code.name} (max-cos {code.max_cos:.3g}) | " + " | ".join(cells) + " |", flush=True)
    if args.few_shot:
        base = load_split(classes=BASE_CLASSES)
        unseen = load_split(classes=NOVEL_CLASSES)
        novel = (unseen[1], unseen[3])  # the unseen digits' test images
        code = _code(None, None, codes[0].d, len(BASE_CLASSES))
        print(f"\nFew-shot transfer: trained on digits 0-6 ({code.name}), 3-way 5-shot nearest-mean accuracy % "
              f"on the unseen digits 7-9 ({len(novel[1])} test images, 300 episodes)\n")
        print("| code | " + " | ".join(f"fixed + {loss}" for loss in LOSSES) + " |")
        print("|---" * (len(LOSSES) + 1) + "|")
        cells = [summary([run(code, loss, base, seed=s, epochs=args.epochs, n_way=len(BASE_CLASSES),
                              k_shot=args.shots, novel=novel) for s in seeds]) for loss in LOSSES]
        print(f"| {code.name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s on {torch.get_num_threads()} CPU thread(s)")


if __name__ == "__main__":
    main()
