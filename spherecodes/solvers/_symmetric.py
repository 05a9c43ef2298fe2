"""Symmetric starting configurations on the 2-sphere.

Many of the best known Tammes codes on S² are symmetric under a rotation group
(Sloane's tables; Tarnai & Gáspár; Lai, Yue, Hao, Glover & Lü 2023): the
icosahedral group I (order 60), the octahedral O (24), the tetrahedral T (12),
and the dihedral D_n (2n) and cyclic C_n (n) groups.  A start that is a union
of orbits of such a group keeps its symmetry while the smoothing is wide (the
gradient of an invariant energy at a symmetric code is symmetric), so the
annealing searches the small symmetric family first (docs/optimisers.md, step 2).

An orbit is either *special* (the points on the rotation axes: for I the 12
vertices, 20 face centres and 30 edge midpoints of the icosahedron) or
*generic* (a random point's images, |G| points).  :func:`symmetric_start`
draws, for N points, a group and a choice of special orbits whose sizes
leave a multiple of |G| for the generic ones, all from a seeded generator.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

__all__ = ["orbit_choices", "symmetric_start"]


def _rotation(axis, angle: float) -> np.ndarray:
    """The rotation by ``angle`` about ``axis`` (Rodrigues' formula)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


def _close(generators: list[np.ndarray]) -> np.ndarray:
    """All products of ``generators`` (a finite rotation group), as a (|G|, 3, 3) array."""
    group = [np.eye(3)]
    frontier = [np.eye(3)]
    while frontier:
        found = []
        for g in frontier:
            for h in generators:
                product = h @ g
                if not any(np.abs(product - e).max() < 1e-9 for e in group):
                    group.append(product)
                    found.append(product)
        frontier = found
    return np.array(group)


def _orbit(group: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The distinct images of the unit vector ``point`` under ``group``."""
    images = group @ point
    # Images are either equal or at least ~1/|G| apart: keep the first of each.
    near = np.abs(images[:, None, :] - images[None, :, :]).max(axis=2) < 1e-9
    return images[~np.triu(near, 1).any(axis=0)]


def _axial(order: int, dihedral: bool) -> np.ndarray:
    """C_n (rotations about the z axis by 2πj/n) or D_n (those and the half-turns about n axes in the xy plane)."""
    angles = 2 * math.pi * np.arange(order) / order
    cos, sin = np.cos(angles), np.sin(angles)
    turns = np.zeros((order, 3, 3))
    turns[:, 0, 0], turns[:, 0, 1], turns[:, 1, 0], turns[:, 1, 1], turns[:, 2, 2] = cos, -sin, sin, cos, 1
    if not dihedral:
        return turns
    flip = np.diag([1.0, -1.0, -1.0])  # the half-turn about the x axis
    return np.concatenate([turns, turns @ flip])


#: Orbit sizes of the polyhedral rotation groups: (order, special orbits).
_POLYHEDRAL = {"I": (60, (12, 20, 30)), "O": (24, (6, 8, 12)), "T": (12, (4, 4, 6))}


def _orbit_sizes(name: str) -> tuple[int, tuple[int, ...]]:
    """(order, sizes of the special orbits) of the group ``name``: I, O, T, D<n> or C<n>."""
    if name in _POLYHEDRAL:
        return _POLYHEDRAL[name]
    order = int(name[1:])
    # D_n: the two poles together, and two sets of n points on its half-turn axes; C_n: each pole alone.
    return (2 * order, (2, order, order)) if name[0] == "D" else (order, (1, 1))


@functools.lru_cache(maxsize=16)
def _group(name: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """(rotations, special orbits as arrays of unit vectors) of the group ``name``."""
    if name in _POLYHEDRAL:
        golden = (1 + math.sqrt(5)) / 2
        if name == "I":
            # 5-fold axes through the icosahedron's vertices (0, ±1, ±golden), 3-fold through its faces.
            five, three = np.array([0.0, 1.0, golden]), np.array([1.0, 1.0, 1.0])
            group = _close([_rotation(five, 2 * math.pi / 5), _rotation(three, 2 * math.pi / 3)])
            axes = [five, three, np.array([0.0, 0.0, 1.0])]
        elif name == "O":
            group = _close([_rotation([0, 0, 1], math.pi / 2), _rotation([1, 1, 1], 2 * math.pi / 3)])
            axes = [np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0]), np.array([1.0, 1.0, 0.0])]
        else:
            group = _close([_rotation([0, 0, 1], math.pi), _rotation([1, 1, 1], 2 * math.pi / 3)])
            axes = [np.array([1.0, 1.0, 1.0]), np.array([-1.0, -1.0, -1.0]), np.array([0.0, 0.0, 1.0])]
        return group, [_orbit(group, axis / np.linalg.norm(axis)) for axis in axes]
    order = int(name[1:])
    poles = [np.array([[0.0, 0.0, 1.0]]), np.array([[0.0, 0.0, -1.0]])]
    if name[0] == "C":
        return _axial(order, False), poles
    angles = 2 * math.pi * np.arange(order) / order
    equator = [np.stack([np.cos(a), np.sin(a), np.zeros(order)], axis=1) for a in (angles, angles + math.pi / order)]
    return _axial(order, True), [np.concatenate(poles), *equator]


def orbit_choices(n: int) -> list[tuple[str, tuple[int, ...], int]]:
    """Every way to make N points from one group's orbits: (group, special orbits used, generic orbits).

    The groups are I, O, T and D_m, C_m for every m whose generic orbit fits in N.

    Examples
    --------
    >>> ("I", (0, 1, 2), 0) in orbit_choices(62)  # 12 + 20 + 30: the icosidodecahedron's relatives
    True
    >>> [c for c in orbit_choices(12) if c[0] == "I"]
    [('I', (0,), 0)]
    """
    names = [*_POLYHEDRAL, *(f"{family}{m}" for m in range(2, n // 2 + 1) for family in "DC")]
    choices = []
    for name in names:
        order, special = _orbit_sizes(name)
        for used in itertools.chain.from_iterable(itertools.combinations(range(len(special)), r)
                                                  for r in range(len(special) + 1)):
            rest = n - sum(special[i] for i in used)
            if rest >= 0 and rest % order == 0 and (used or rest):
                choices.append((name, used, rest // order))
    return choices


def symmetric_start(n: int, rng: np.random.Generator, choices=None) -> tuple[np.ndarray, str]:
    """N unit vectors in R^3 forming a union of orbits of a rotation group, randomly oriented.

    Returns the points and a description (e.g. ``"I: 30+20+60x1"``).  The
    family (I, O, T, D or C) is drawn among those that can make N points
    (I, O and T with twice the weight of D and C), then the group and orbits uniformly among the family's
    :func:`orbit_choices` (pass them to save recomputing); the generic
    orbits' points and the final orientation come from ``rng`` too.

    Examples
    --------
    >>> import numpy as np
    >>> points, what = symmetric_start(24, np.random.default_rng(0))
    >>> points.shape, bool(np.allclose(np.linalg.norm(points, axis=1), 1))
    ((24, 3), True)
    """
    choices = orbit_choices(n) if choices is None else choices
    # The polyhedral groups have few choices and the dihedral and cyclic ones
    # many: draw a family first, so that each family gets its share.
    families = sorted({choice[0][0] for choice in choices})
    # The polyhedral groups fix a code with the fewest free parameters: twice the share.
    families += [family for family in families if family in "IOT"]
    family = families[int(rng.integers(len(families)))]
    members = [choice for choice in choices if choice[0][0] == family]
    name, used, generic = members[int(rng.integers(len(members)))]
    group, special = _group(name)
    parts = [special[i] for i in used]
    for _ in range(generic):
        point = rng.standard_normal(3)
        parts.append(group @ (point / np.linalg.norm(point)))
    points = np.concatenate(parts)
    orientation = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    sizes = "+".join([str(len(special[i])) for i in used] + ([f"{len(group)}x{generic}"] if generic else []))
    return points @ orientation.T, f"{name}: {sizes}"
