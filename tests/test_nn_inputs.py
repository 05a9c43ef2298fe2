"""The torch adapter refuses bad input with one line, before anything is computed or copied."""

import io

import numpy as np
import pytest
import torch

from spherecodes.bank import write_code
from spherecodes.code import make_code
from spherecodes.errors import SpherecodesError
from spherecodes.nn import (
    ClassMeanClassifier,
    CosineCrossEntropyLoss,
    DotRegressionLoss,
    DynamicAssignment,
    HPNLoss,
    PrototypeClassifier,
    PrototypeRegressor,
    collapse_metrics,
    match_prototypes,
    nc1,
    proto_loss,
)

from conftest import random_code

NAN = float("nan")


def head3():
    return PrototypeClassifier(random_code(3, 4, seed=0), labels=["a", "b", "c"])


def checkpoint(module) -> dict:
    """The module's state as torch.save writes it and torch.load(weights_only=True) reads it back."""
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("bad", [NAN, float("inf")])
@pytest.mark.parametrize("call", [
    lambda z, y: head3()(z),
    lambda z, y: HPNLoss(head3())(z, y),
    lambda z, y: CosineCrossEntropyLoss(head3())(z, y),
    lambda z, y: DotRegressionLoss(head3())(z, y),
    lambda z, y: proto_loss(z, y),
    lambda z, y: DynamicAssignment(head3()).step(z, y),
    lambda z, y: ClassMeanClassifier(3, 4).update(z, y),
    lambda z, y: collapse_metrics(z, y),
    lambda z, y: PrototypeRegressor(0.0, 1.0, dim=4).loss(z, torch.tensor([0.5, 0.5, 0.5, 0.5])),
], ids=["head", "hpn", "ce", "dr", "proto", "assignment", "cmf", "metrics", "regressor"])
def test_non_finite_features_are_refused(call, bad):
    z = torch.randn(4, 4)
    z[1, 2] = bad
    with pytest.raises(SpherecodesError, match="NaN or inf"):
        call(z, torch.tensor([0, 1, 2, 0]))


@pytest.mark.parametrize("labels, message", [
    (torch.tensor([0.0, 1.0, 2.0, 0.0]), "integer class indices, got torch.float32"),
    (torch.tensor([True, False, True, False]), "integer class indices, got torch.bool"),
    (torch.tensor([0, 1, 3, 0]), r"class indices in 0..2, got 0..3"),
    (torch.tensor([0, -1, 2, 0]), r"class indices in 0..2, got -1..2"),
    (torch.tensor([0, 1, 2]), r"shape \(3,\); expected \(4,\)"),
])
@pytest.mark.parametrize("call", [
    lambda z, y: HPNLoss(head3())(z, y),
    lambda z, y: CosineCrossEntropyLoss(head3())(z, y),
    lambda z, y: DotRegressionLoss(head3())(z, y),
    lambda z, y: DynamicAssignment(head3()).step(z, y),
    lambda z, y: ClassMeanClassifier(3, 4).update(z, y),
    lambda z, y: nc1(z, y, num_classes=3),
], ids=["hpn", "ce", "dr", "assignment", "cmf", "nc1"])
def test_labels_must_be_integer_class_indices_in_range(call, labels, message):
    with pytest.raises(SpherecodesError, match=message):
        call(torch.randn(4, 4), labels)


def test_features_of_the_wrong_width_are_refused():
    with pytest.raises(SpherecodesError, match=r"shape \(2, 5\); expected \(\.\.\., 4\)"):
        head3()(torch.randn(2, 5))


def test_reassign_refuses_nan_class_means():
    head = head3()
    before = head.prototypes.clone()
    with pytest.raises(SpherecodesError, match="class means hold NaN"):
        head.reassign(torch.tensor([[NAN, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]))
    with pytest.raises(SpherecodesError, match="class means hold NaN"):
        match_prototypes(torch.full((2, 4), NAN), torch.eye(4))
    assert torch.equal(head.prototypes, before)


@pytest.mark.parametrize("change, message", [
    (lambda s: s.pop("prototypes"), "lacks prototypes"),
    (lambda s: s.pop("_extra_state"), "lacks _extra_state"),
    (lambda s: s["_extra_state"].update(temperature=-1.0), "temperature is -1.0; it must be positive"),
    (lambda s: s["_extra_state"].update(temperature=NAN), "expected a finite number"),
    (lambda s: s["_extra_state"].update(labels=["a", "a", "c"]), r"labels must be distinct \(compared in Unicode.s composed form NFC\); repeated: a"),
    (lambda s: s["_extra_state"].update(labels=["a", "b"]), "got 2 labels for 3 prototypes"),
    (lambda s: s["_extra_state"].pop("labels"), "extra state lacks labels"),
    (lambda s: s.update(prototypes=torch.randn(5, 4)), r"shape \(5, 4\); this module holds \(3, 4\)"),
    (lambda s: s["prototypes"].__setitem__((0, 0), NAN), "NaN or inf"),
    (lambda s: s["prototypes"].mul_(2.0), "prototypes are unit vectors"),
    (lambda s: s["prototypes"].__setitem__(1, s["prototypes"][0]), "rows 0 and 1 are identical"),
])
def test_a_damaged_head_checkpoint_is_refused_and_nothing_is_loaded(change, message):
    state = checkpoint(PrototypeClassifier(random_code(3, 4, seed=1), labels=["x", "y", "z"], temperature=0.2))
    change(state)
    head = head3()
    before = head.prototypes.clone()
    with pytest.raises(SpherecodesError, match=message):
        head.load_state_dict(state)
    assert torch.equal(head.prototypes, before) and head.labels == ["a", "b", "c"] and head.temperature == 0.1


def test_a_head_inside_a_model_is_checked_too():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), head3())
    state = checkpoint(model)
    state["1._extra_state"]["temperature"] = 0.0
    with pytest.raises(SpherecodesError, match="temperature is 0.0"):
        model.load_state_dict(state)


@pytest.mark.parametrize("change, message", [
    (lambda s: s["_extra_state"].update(momentum=5.0), "momentum is 5.0; it must be in \\[0, 1\\)"),
    (lambda s: s["_extra_state"].update(every=0), "every is 0; it must be an integer >= 1"),
    (lambda s: s["_extra_state"].update(moves="many"), "moves must be a list of integers"),
    (lambda s: s.pop("running_means"), "lacks running_means"),
    (lambda s: s.pop("head._extra_state"), "lacks head._extra_state"),
    (lambda s: s["running_means"].fill_(NAN), "NaN or inf"),
    (lambda s: s.update(seen=s["seen"].int()), "holds torch.int32 values"),
    (lambda s: s["head._extra_state"].update(labels=["a", "a", "b"]), "labels must be distinct"),
])
def test_a_damaged_assignment_checkpoint_is_refused_and_nothing_is_loaded(change, message):
    saved = DynamicAssignment(head3(), momentum=0.5, every=3)
    saved.step(torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2]))
    state = checkpoint(saved)
    change(state)
    fresh = DynamicAssignment(head3())
    with pytest.raises(SpherecodesError, match=message):
        fresh.load_state_dict(state)
    assert fresh.momentum == 0.9 and fresh.every == 1 and int(fresh.num_steps) == 0
    assert not bool(fresh.seen.any())


def test_a_class_mean_and_a_regressor_checkpoint_are_checked():
    state = checkpoint(ClassMeanClassifier(3, 4))
    state["_extra_state"]["beta"] = 1.5
    with pytest.raises(SpherecodesError, match="beta is 1.5"):
        ClassMeanClassifier(3, 4).load_state_dict(state)
    state = checkpoint(PrototypeRegressor(0.0, 1.0, dim=3))
    state["_extra_state"].update(lower=2.0)
    with pytest.raises(SpherecodesError, match="lower must be below upper"):
        PrototypeRegressor(0.0, 1.0, dim=3).load_state_dict(state)


def test_a_dtype_that_would_merge_two_prototypes_is_refused(tmp_bank):
    # Two rows 1e-5 apart: distinct in float64 and float32, one row in float16 (machine epsilon 1e-3).
    rows = np.array([[0.6, 0.8, 0.0], [0.6 + 1e-5, 0.8 - 0.75e-5, 0.0], [0.0, 0.0, 1.0]])
    write_code(tmp_bank, make_code(rows / np.linalg.norm(rows, axis=1, keepdims=True), method="external",
                                   name="close"))
    assert PrototypeClassifier.from_bank(tmp_bank, dtype=torch.float32).num_classes == 3
    with pytest.raises(SpherecodesError, match=r"rounded to torch.float16, the prototypes clash: rows 0 and 1 are "
                                               r"identical.*wider dtype"):
        PrototypeClassifier.from_bank(tmp_bank, dtype=torch.float16)


def test_an_expanded_tensor_file_gives_one_line_not_gigabytes(tmp_path):
    row = torch.nn.functional.normalize(torch.randn(1, 20_000), dim=1)
    path = tmp_path / "big.pt"
    torch.save(row.expand(20_000, 20_000), path)
    assert path.stat().st_size < 200_000  # torch.save keeps the one row
    loaded = torch.load(path, weights_only=True)
    with pytest.raises(SpherecodesError, match="20,000 prototypes are one row repeated"):
        PrototypeClassifier(loaded)
    head = head3()
    with pytest.raises(SpherecodesError, match=r"shape \(20000, 20000\); this module holds \(3, 4\)"):
        head.load_state_dict({"prototypes": loaded, "_extra_state": {"labels": None, "temperature": 0.1}})
