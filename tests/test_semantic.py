"""Semantic prototypes: class names, embedding files, agreement, assignment and the ranking loss.

Every embedding file is written here, in a temporary directory, from vectors
with planted cluster structure; nothing is downloaded.
"""

import gzip
import itertools
import shutil

import numpy as np
import pytest
import torch
from gensim.models import KeyedVectors, Word2Vec
from scipy.stats import spearmanr

from spherecodes.bank import read_code, write_code
from spherecodes.code import make_code
from spherecodes.report import format_assignment
from spherecodes.context import RunContext
from spherecodes.options import PrivilegedOptions
from spherecodes.run import generate
from spherecodes.constructions import cell_600, cross_polytope, simplex_etf
from spherecodes.errors import SpherecodesError
from spherecodes.semantic import (
    ALL_TRIPLETS_UP_TO_K,
    ClassEmbeddings,
    RankingTriplets,
    assign_by_class_means,
    assign_by_embeddings,
    assign_code,
    class_embeddings,
    load_class_means,
    load_embeddings,
    privileged,
    privileged_information_loss,
    read_class_names,
    relabel_code,
    semantic_agreement,
    semantic_report,
)
from spherecodes.semantic.assignment import _pair_swaps
from spherecodes.solvers import tammes
from spherecodes.stats import separation_statistics

# The module that holds the privileged optimiser.
import spherecodes.semantic.ranking as privileged_module

from conftest import dense_offdiagonal_cos, random_code

WORDS = ["cat", "dog", "wolf", "car", "truck", "bus", "maple", "oak", "tree", "pickup_truck", "été"]


def planted_clusters(k, m, clusters, seed=0, noise=0.3):
    """K unit vectors in R^m around ``clusters`` random centres; class c is in cluster c % clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, m))
    e = centres[np.arange(k) % clusters] + noise * rng.standard_normal((k, m))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def keyed_vectors():
    """Word vectors with three planted groups: animals, vehicles, trees."""
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((3, 16))
    group = {"cat": 0, "dog": 0, "wolf": 0, "car": 1, "truck": 1, "bus": 1, "pickup_truck": 1,
             "maple": 2, "oak": 2, "tree": 2, "été": 2}
    vectors = np.array([centres[group[w]] + 0.2 * rng.standard_normal(16) for w in WORDS], dtype=np.float32)
    kv = KeyedVectors(16)
    kv.add_vectors(WORDS, vectors)
    return kv


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


# --------------------------------------------------------------------------- class names


def test_class_names_are_read_one_per_line(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_bytes("\ufeffcat\n  dog  \n\nmaple tree\r\npickup_truck\n\n".encode("utf-8"))
    assert read_class_names(path) == ["cat", "dog", "maple tree", "pickup_truck"]


def test_duplicate_class_names_are_refused_with_their_lines(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_text("cat\ndog\ncat\nbus\ndog\ncat\n")
    with pytest.raises(SpherecodesError, match=r"'cat' \(lines 1, 3, 6\); 'dog' \(lines 2, 5\)"):
        read_class_names(path)


@pytest.mark.parametrize(
    "content, message",
    [(b"cat\n\n", "holds 1 class names"), (b"cat\n\xff\xfe\n", "not UTF-8")],
)
def test_unusable_class_files_are_refused(tmp_path, content, message):
    path = tmp_path / "classes.txt"
    path.write_bytes(content)
    with pytest.raises(SpherecodesError, match=message):
        read_class_names(path)
    with pytest.raises(SpherecodesError, match="no such class-names file"):
        read_class_names(tmp_path / "missing.txt")


# --------------------------------------------------------------------------- embedding files


def write_every_format(kv, folder):
    """The same vectors in every format ``load_embeddings`` reads: {description: (path, format)}."""
    files = {
        "word2vec text": (folder / "vectors.txt", "word2vec-text"),
        "word2vec binary": (folder / "vectors.bin", "word2vec-binary"),
        "GloVe without header": (folder / "glove.txt", "glove"),
        "GloVe with header": (folder / "glove_header.txt", "word2vec-text"),
        "saved KeyedVectors": (folder / "vectors.kv", "gensim"),
        "gzipped word2vec text": (folder / "vectors.txt.gz", "word2vec-text"),
    }
    kv.save_word2vec_format(str(files["word2vec text"][0]))
    kv.save_word2vec_format(str(files["word2vec binary"][0]), binary=True)
    kv.save_word2vec_format(str(files["GloVe without header"][0]), write_header=False)
    # GloVe's own tool writes no header; users often add one with gensim's glove2word2vec.
    shutil.copy(files["word2vec text"][0], files["GloVe with header"][0])
    kv.save(str(files["saved KeyedVectors"][0]))
    with open(files["word2vec text"][0], "rb") as src, gzip.open(files["gzipped word2vec text"][0], "wb") as dst:
        dst.write(src.read())
    return files


def test_every_embedding_format_loads_the_same_vectors(keyed_vectors, tmp_path):
    for description, (path, fmt) in write_every_format(keyed_vectors, tmp_path).items():
        # auto reads every data format; a gensim save (a pickle) loads only when named.
        for requested in ("auto", fmt) if fmt != "gensim" else (fmt,):
            loaded = load_embeddings(path, requested)
            assert sorted(loaded.key_to_index) == sorted(WORDS), description
            for word in WORDS:
                np.testing.assert_allclose(loaded[word], keyed_vectors[word], rtol=1e-6, err_msg=description)
        emb = class_embeddings(["cat", "maple tree"], path, fmt=fmt)
        assert emb.source == str(path)
        np.testing.assert_allclose(emb.vectors[0], unit(keyed_vectors["cat"]), rtol=1e-6)


def test_a_saved_word2vec_model_loads_its_vectors(tmp_path):
    corpus = [["cat", "dog", "pet"], ["car", "bus", "road"]] * 30
    model = Word2Vec(corpus, vector_size=8, min_count=1, seed=3, workers=1, epochs=3)
    model.save(str(tmp_path / "w2v.model"))
    with pytest.raises(SpherecodesError, match="pickle.*auto never unpickles"):
        load_embeddings(tmp_path / "w2v.model")
    loaded = load_embeddings(tmp_path / "w2v.model", "gensim")
    np.testing.assert_array_equal(loaded["cat"], model.wv["cat"])
    emb = class_embeddings(["cat", "dog", "car"], tmp_path / "w2v.model", fmt="gensim")
    assert emb.source == str(tmp_path / "w2v.model") and emb.vectors.shape == (3, 8)


def test_unreadable_embedding_files_are_one_line_errors(keyed_vectors, tmp_path):
    (tmp_path / "notes.txt").write_text("this is not\nan embedding file\n")
    with pytest.raises(SpherecodesError, match="not a recognised embedding file"):
        load_embeddings(tmp_path / "notes.txt")
    keyed_vectors.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    with pytest.raises(SpherecodesError, match=r"cannot read .* as word2vec-text embeddings") as err:
        load_embeddings(tmp_path / "v.bin", "word2vec-text")
    assert "\n" not in str(err.value)
    with pytest.raises(SpherecodesError, match="no such word-vector file"):
        load_embeddings(tmp_path / "absent.bin")
    with pytest.raises(SpherecodesError, match="unknown embedding format 'fasttext'"):
        load_embeddings(tmp_path / "v.bin", "fasttext")


# --------------------------------------------------------------------------- class embeddings


def test_multi_word_names_use_the_whole_token_or_the_mean_of_their_words(keyed_vectors):
    emb = class_embeddings(["pickup_truck", "maple tree", "Maple_Tree", "Cat", "oak"], keyed_vectors)
    np.testing.assert_allclose(emb.vectors[0], unit(keyed_vectors["pickup_truck"]))
    mean_of_words = unit(unit(keyed_vectors["maple"]) + unit(keyed_vectors["tree"]))
    np.testing.assert_allclose(emb.vectors[1], mean_of_words)
    np.testing.assert_allclose(emb.vectors[2], mean_of_words)
    np.testing.assert_allclose(emb.vectors[3], unit(keyed_vectors["cat"]))
    assert emb.partial == {} and emb.fallback == []


def test_a_name_with_some_words_missing_uses_the_others_and_says_so(keyed_vectors):
    emb = class_embeddings(["sugar maple", "cat", "dog"], keyed_vectors)
    np.testing.assert_allclose(emb.vectors[0], unit(keyed_vectors["maple"]))
    assert emb.partial == {"sugar maple": ("sugar",)}
    assert emb.settings()["partially_embedded"] == {"sugar maple": ["sugar"]}


def test_missing_names_are_all_listed_never_silently_zero(keyed_vectors):
    names = ["cat", "unicorn", "flying carpet", "dog", "dragon_fly"]
    with pytest.raises(SpherecodesError) as err:
        class_embeddings(names, keyed_vectors)
    message = str(err.value)
    assert "3 of 5 class names" in message and "\n" not in message
    for name in ("'unicorn'", "'flying carpet'", "'dragon_fly'"):
        assert name in message


def test_the_random_fallback_is_unit_deterministic_and_per_name(keyed_vectors):
    emb = class_embeddings(["cat", "unicorn", "dog"], keyed_vectors, missing="random")
    again = class_embeddings(["unicorn", "dog", "cat"], keyed_vectors, missing="random")
    assert emb.fallback == ["unicorn"]
    np.testing.assert_allclose(np.linalg.norm(emb.vectors, axis=1), 1.0)
    np.testing.assert_array_equal(emb.vectors[1], again.vectors[0])
    assert emb.settings()["random_fallback"] == ["unicorn"]
    with pytest.raises(SpherecodesError, match="unknown missing-word policy"):
        class_embeddings(["cat", "dog"], keyed_vectors, missing="zero")


def test_duplicate_names_are_refused_by_class_embeddings(keyed_vectors):
    with pytest.raises(SpherecodesError, match="repeated: 'cat'"):
        class_embeddings(["cat", "dog", "cat"], keyed_vectors)


def test_alignment_to_labels_names_every_difference():
    emb = ClassEmbeddings(["a", "b", "c"], np.eye(3))
    np.testing.assert_array_equal(emb.aligned_to(["c", "a", "b"]), np.eye(3)[[2, 0, 1]])
    differences = r"labels not among the class names: 'x'; class names not among the labels: 'c'"
    with pytest.raises(SpherecodesError, match=differences):
        emb.aligned_to(["a", "b", "x"])


# --------------------------------------------------------------------------- agreement


def brute_force_agreement(w, e):
    """The definition itself: over ordered triplets (i, j, k) of distinct classes,
    does [cos(p_i,p_j) >= cos(p_i,p_k)] equal [cos(e_i,e_j) >= cos(e_i,e_k)]?"""
    pg, eg = w @ w.T, e @ e.T

    def at_least(x, y):  # with the same tie tolerance as the library
        return x >= y - 1e-12

    agree = [
        at_least(pg[i, j], pg[i, k]) == at_least(eg[i, j], eg[i, k])
        for i, j, k in itertools.permutations(range(len(w)), 3)
    ]
    return float(np.mean(agree))


@pytest.mark.parametrize(
    "w",
    [random_code(9, 3, seed=2), cross_polytope(8, 4), cell_600()[:10]],
    ids=["random", "cross-polytope (ties)", "600-cell (ties)"],
)
def test_agreement_matches_the_brute_force_definition(w):
    e = planted_clusters(len(w), 5, 3, seed=4)
    result = semantic_agreement(w, e)
    assert result["triplet_agreement"] == pytest.approx(brute_force_agreement(w, e), abs=1e-12)
    first, second = np.triu_indices(len(w), 1)
    expected = spearmanr((w @ w.T)[first, second], (e @ e.T)[first, second]).statistic
    assert result["spearman"] == pytest.approx(expected)
    k = len(w)
    assert (result["triplets"], result["triplets_total"], result["triplets_sampled"]) == (
        k * (k - 1) * (k - 2) // 2, k * (k - 1) * (k - 2) // 2, False)


def test_identical_structure_agrees_fully_and_chance_is_one_half():
    w = random_code(30, 5, seed=1)
    assert semantic_agreement(w, w)["triplet_agreement"] == 1.0
    chance = [semantic_agreement(w, random_code(30, 5, seed=s))["triplet_agreement"] for s in range(10, 15)]
    assert abs(np.mean(chance) - 0.5) < 0.03


def test_large_k_is_sampled_with_the_sample_stated():
    w, e = random_code(60, 4, seed=3), planted_clusters(60, 6, 4)
    exact = semantic_agreement(w, e)
    sampled = semantic_agreement(w, e, max_triplets=20000, max_pairs=500, seed=7)
    assert sampled["triplets_sampled"] and sampled["triplets"] == 20000 and sampled["seed"] == 7
    assert sampled["pairs_sampled"] and sampled["pairs"] == 500 and sampled["pairs_total"] == 60 * 59 // 2
    assert sampled["triplet_agreement"] == pytest.approx(exact["triplet_agreement"], abs=0.015)
    assert sampled == semantic_agreement(w, e, max_triplets=20000, max_pairs=500, seed=7)


def test_spearman_is_none_when_undefined():
    e = planted_clusters(4, 3, 2)
    assert semantic_agreement(cross_polytope(4, 2), e)["spearman"] is not None  # cosines 0 and -1
    assert semantic_agreement(simplex_etf(4), e)["spearman"] is None  # one cosine, up to rounding


def test_semantic_report_matches_by_label_and_needs_labels():
    w, e = random_code(12, 3, seed=5), planted_clusters(12, 4, 3)
    names = [f"class{c}" for c in range(12)]
    emb = ClassEmbeddings(names, e, source="planted")
    rng = np.random.default_rng(0)
    labels = list(np.array(names)[rng.permutation(12)])
    report = semantic_report(make_code(w, method="tammes", labels=labels), emb)
    assert report["triplet_agreement"] == semantic_agreement(w, emb.aligned_to(labels))["triplet_agreement"]
    assert report["embeddings"] == "planted"
    unlabelled = make_code(w, method="tammes")
    with pytest.raises(SpherecodesError, match="has no labels"):
        semantic_report(unlabelled, emb)
    assert semantic_report(unlabelled, emb, labels=labels)["triplet_agreement"] == report["triplet_agreement"]


# --------------------------------------------------------------------------- assignment


def qap_objective(g, a, order):
    return float(np.sum(g * a[np.ix_(order, order)]))


def centred(gram):
    g = gram.copy()
    np.fill_diagonal(g, 0)
    g -= g.sum() / (len(g) * (len(g) - 1))
    np.fill_diagonal(g, 0)
    return g


def test_pair_swaps_reach_a_swap_local_optimum_and_only_improve():
    w, e = random_code(14, 3, seed=6), planted_clusters(14, 5, 3, seed=6)
    g, a = centred(w @ w.T), centred(e @ e.T)
    start = np.random.default_rng(1).permutation(14)
    order, swaps, reason = _pair_swaps(g, a, start, None, None)
    assert reason == "local optimum" and swaps > 0
    assert sorted(order) == list(range(14))
    best = qap_objective(g, a, order)
    assert best > qap_objective(g, a, start)
    for r, s in itertools.combinations(range(14), 2):
        swapped = order.copy()
        swapped[[r, s]] = swapped[[s, r]]
        assert qap_objective(g, a, swapped) <= best + 1e-9


def test_assignment_is_a_permutation_that_changes_no_separation_number(tmp_bank):
    k = 40
    w = random_code(k, 4, seed=8)
    names = [f"c{i}" for i in range(k)]
    emb = ClassEmbeddings(names, planted_clusters(k, 6, 5, seed=8))
    code = make_code(w, method="tammes", labels=names, seed=8)
    write_code(tmp_bank, code)
    new, result = assign_code(read_code(tmp_bank), embeddings=emb)
    assert sorted(result.order) == list(range(k))
    assert sorted(new.labels) == sorted(names) and new.labels == [names[c] for c in result.order]
    write_code(tmp_bank, new, overwrite=True)
    stored = read_code(tmp_bank)
    assert stored.prototypes.tobytes() == code.prototypes.tobytes() and stored.sha256 == code.sha256
    assert stored.stats.max_cos == code.stats.max_cos
    np.testing.assert_array_equal(stored.stats.nearest_cos, code.stats.nearest_cos)
    # Every class pair's cosine is some prototype pair's cosine: the multiset is unchanged.
    before = np.sort((w @ w.T)[np.triu_indices(k, 1)])
    relabelled = w[np.argsort(result.order)]  # row c: the prototype of class c
    after = np.sort((relabelled @ relabelled.T)[np.triu_indices(k, 1)])
    np.testing.assert_array_equal(before, after)
    assert stored.settings["assignment"]["method"] == "quadratic"
    assert stored.settings["assignment"]["random_fallback"] == []
    assert stored.labels == new.labels


def test_assign_raises_agreement_on_planted_clusters():
    k = 80
    w = random_code(k, 6, seed=11)
    e = planted_clusters(k, 10, 8, seed=12)
    result = assign_by_embeddings(w, e)
    before = result.agreement_before["triplet_agreement"]
    after = result.agreement_after["triplet_agreement"]
    assert after > before + 0.05 and after > 0.55
    assert result.objective_after > result.objective_before
    assert result.agreement_after["spearman"] > result.agreement_before["spearman"] + 0.1
    # The starting order is kept if nothing beats it, so assigning twice changes nothing.
    again = assign_by_embeddings(w, e, initial_order=result.order)
    np.testing.assert_array_equal(again.order, result.order)


def test_assignment_respects_its_time_and_swap_limits():
    w, e = random_code(50, 4, seed=1), planted_clusters(50, 5, 5)
    assert assign_by_embeddings(w, e, relaxation_iterations=0, max_swaps=3).swaps == 3
    assert assign_by_embeddings(w, e, time_limit=0.0).stop_reason == "time limit"


def test_linear_assignment_recovers_a_planted_permutation():
    k, d = 60, 8
    w = random_code(k, d, seed=21)
    perm = np.random.default_rng(5).permutation(k)  # class c was trained on prototype perm[c]
    means = 3.0 * w[perm] + 0.05 * np.random.default_rng(6).standard_normal((k, d))
    result = assign_by_class_means(w, means)
    np.testing.assert_array_equal(result.order, np.argsort(perm))
    assert result.objective_after > 0.99 > result.objective_before


def test_assign_code_with_class_means_keeps_label_names(tmp_bank):
    w = random_code(6, 3, seed=2)
    labels = ["a", "b", "c", "d", "e", "f"]
    code = make_code(w, method="tammes", labels=labels)
    means = w[[1, 0, 2, 3, 5, 4]]  # classes a/b and e/f were trained on each other's prototype
    new, result = assign_code(code, class_means=means)
    assert new.labels == ["b", "a", "c", "d", "f", "e"]
    assert result.objective_after == pytest.approx(1.0)
    unlabelled, _ = assign_code(make_code(w, method="tammes"), class_means=means)
    assert unlabelled.labels == ["1", "0", "2", "3", "5", "4"]
    with pytest.raises(SpherecodesError, match="not both"):
        assign_code(code)
    with pytest.raises(SpherecodesError, match=r"shape \(6, 4\)"):
        assign_code(code, class_means=np.ones((6, 4)))


def test_relabel_keeps_everything_but_the_labels():
    code = make_code(cell_600(), method="600-cell", labels=[f"x{i}" for i in range(120)], settings={"a": 1})
    code.certificate = object()  # stands for a certificate: rows do not move, so it stays valid
    result = assign_by_class_means(code.prototypes, code.prototypes[::-1])
    new = relabel_code(code, result, code.labels)
    assert new.labels == code.labels[::-1] and code.labels[0] == "x0"
    assert new.settings["a"] == 1 and new.settings["assignment"]["method"] == "linear"
    assert new.sha256 == code.sha256 and new.certificate is code.certificate and new.stats is code.stats
    assert separation_statistics(new.prototypes).max_cos == code.stats.max_cos
    with pytest.raises(SpherecodesError, match="repeated: 'x1'"):
        relabel_code(code, result, ["x1"] * 120)


# --------------------------------------------------------------------------- the ranking loss (Eq. 6)


def test_all_triplets_are_every_unordered_triplet_with_its_target():
    e = planted_clusters(7, 4, 2, seed=3)
    near, far, target = RankingTriplets(e, "all").batch()
    k, eg = 7, e @ e.T
    assert near.numel() == k * (k - 1) * (k - 2) // 2
    seen = set()
    for n, f, t in zip(near.tolist(), far.tolist(), target.tolist()):
        i, j, i2, l = n // k, n % k, f // k, f % k
        assert i == i2 and len({i, j, l}) == 3 and j < l
        assert t == float(eg[i, j] >= eg[i, l])
        seen.add((i, j, l))
    assert len(seen) == near.numel()


def test_sampled_triplets_are_distinct_classes_and_reproducible():
    e = planted_clusters(300, 5, 6)
    a, b = RankingTriplets(e, samples=5000, seed=4), RankingTriplets(e, samples=5000, seed=4)
    assert a.strategy == "sampled"  # auto, beyond 200 classes
    first, again = a.batch(), b.batch()
    for x, y in zip(first, again):
        assert torch.equal(x, y)
    assert not torch.equal(a.batch()[0], first[0])  # a fresh sample every step
    near, far, target = first
    i, j, l = near // 300, near % 300, far % 300
    assert torch.equal(i, far // 300) and bool(((i != j) & (i != l) & (j != l)).all())
    eg = torch.as_tensor(e @ e.T)
    assert torch.equal(target, (eg[i, j] >= eg[i, l]).to(torch.float64))


def test_sampled_targets_without_the_embedding_gram_are_the_same(monkeypatch):
    e = planted_clusters(300, 5, 6)
    with_gram = RankingTriplets(e, "sampled", samples=5000, seed=4).batch()
    monkeypatch.setattr(privileged_module, "_EMBEDDING_GRAM_UP_TO_K", 10)
    without = RankingTriplets(e, "sampled", samples=5000, seed=4)
    assert without._embed_gram is None
    for x, y in zip(with_gram, without.batch()):
        assert torch.equal(x, y)


def test_neighbour_triplets_rank_a_neighbour_above_any_other_class():
    k, n = ALL_TRIPLETS_UP_TO_K + 1, 3
    e = planted_clusters(k, 6, 10)
    triplets = RankingTriplets(e, "neighbours", samples=400_000, neighbours=n, seed=1)
    assert triplets.settings() == {"triplets": "neighbours", "triplets_per_step": 400_000, "triplet_seed": 1,
                                   "neighbours": 3}
    near, far, target = triplets.batch()
    eg = e @ e.T
    np.fill_diagonal(eg, -np.inf)
    top = np.argsort(-eg, axis=1)[:, :n]
    i, j, l = (near // k).numpy(), (near % k).numpy(), (far % k).numpy()
    assert (j[:, None] == top[i]).any(axis=1).all()
    assert not (l[:, None] == top[i]).any() and not (l == i).any()
    assert bool((target == 1).all())
    # Every non-neighbour of a class is reachable: anchor 0's far classes cover all the others.
    assert set(l[i == 0]) == set(range(k)) - set(top[0]) - {0}


def test_the_ranking_loss_is_equation_6():
    w = torch.as_tensor(random_code(6, 3, seed=9))
    e = planted_clusters(6, 4, 2)
    near, far, target = RankingTriplets(e, "all").batch()
    gram = (w @ w.T).requires_grad_(True)
    loss = privileged_information_loss(gram, near, far, target)
    flat = gram.detach().reshape(-1)
    s = torch.sigmoid(flat[near] - flat[far])
    expected = (-target * torch.log(s) - (1 - target) * torch.log(1 - s)).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12)
    loss.backward()
    assert gram.grad is not None and torch.isfinite(gram.grad).all()


# --------------------------------------------------------------------------- the privileged optimiser


@pytest.fixture(scope="module")
def clustered_classes():
    return planted_clusters(24, 6, 4, seed=2)


def test_privileged_is_deterministic_and_records_its_settings(clustered_classes):
    emb = ClassEmbeddings([f"c{i}" for i in range(24)], clustered_classes, source="planted")
    first = privileged(5, 24, emb, seed=3, steps=60, device="cpu")
    again = privileged(5, 24, emb, seed=3, steps=60, device="cpu")
    assert first.prototypes.tobytes() == again.prototypes.tobytes()
    np.testing.assert_allclose(np.linalg.norm(first.prototypes, axis=1), 1.0, atol=1e-12)
    s = first.settings
    assert (s["method"], s["semantic_weight"], s["triplets"]) == ("privileged", 1.0, "all")
    assert s["triplets_per_step"] == 24 * 23 * 22 // 2
    assert s["embeddings"] == "planted" and first.method == "privileged" and first.steps == 60
    assert first.history.shape[1] == 3 and first.stop_reason == "steps"
    code = make_code(first.prototypes, method="privileged", labels=emb.names, settings=s, seed=3)
    assert code.labels == emb.names


@pytest.mark.slow
def test_privileged_is_never_below_assign_and_keeps_max_cos_within_its_tolerance(clustered_classes):
    start = tammes(5, 24, seed=0, device="cpu").prototypes
    # What `assign` gives on the same Tammes code, computed here on its own.
    order = assign_by_embeddings(start, clustered_classes).order
    assigned = start[np.argsort(order)]
    assign_agreement = semantic_agreement(assigned, clustered_classes)["triplet_agreement"]
    start_max_cos = dense_offdiagonal_cos(start).max()
    agreement = {}
    for tolerance in (0.0, 0.02, 0.1):
        res = privileged(5, 24, clustered_classes, max_cos_tolerance=tolerance, start=start, seed=0, steps=300,
                         device="cpu")
        assert dense_offdiagonal_cos(res.prototypes).max() <= start_max_cos + tolerance + 1e-12
        agreement[tolerance] = semantic_agreement(res.prototypes, clustered_classes)["triplet_agreement"]
        assert agreement[tolerance] >= assign_agreement
        assert res.settings["start_agreement"] == pytest.approx(assign_agreement, abs=1e-12)
    # A separation budget buys agreement on clustered classes.
    assert agreement[0.1] > assign_agreement + 0.02
    keep = privileged(5, 24, clustered_classes, semantic_weight=0, start=start, device="cpu")
    assert np.array_equal(keep.prototypes, assigned)


@pytest.mark.slow
def test_privileged_samples_triplets_beyond_200_classes():
    k = ALL_TRIPLETS_UP_TO_K + 1
    e = planted_clusters(k, 6, 20)
    start = random_code(k, 4, 0)  # the triplet sets are under test, not the Tammes start
    res = privileged(4, k, e, steps=3, device="cpu", triplet_samples=1000, start=start)
    assert res.settings["triplets"] == "sampled" and res.settings["triplets_per_step"] == 1000
    assert res.settings["triplet_seed"] == 0
    near = privileged(4, k, e, steps=3, device="cpu", triplets="neighbours", neighbours=5, start=start)
    assert (near.settings["triplets"], near.settings["neighbours"]) == ("neighbours", 5)


def test_privileged_refuses_bad_input_and_stops_on_time(clustered_classes):
    with pytest.raises(SpherecodesError, match="24 class embeddings for K=25"):
        privileged(5, 25, clustered_classes, device="cpu")
    with pytest.raises(SpherecodesError, match="semantic weight must be a finite number >= 0"):
        privileged(5, 24, clustered_classes, semantic_weight=-1, device="cpu")
    with pytest.raises(SpherecodesError, match="max-cos tolerance must be a finite number >= 0"):
        privileged(5, 24, clustered_classes, max_cos_tolerance=float("nan"), device="cpu")
    with pytest.raises(SpherecodesError, match="unknown triplet strategy"):
        privileged(5, 24, clustered_classes, triplets="some", device="cpu")
    res = privileged(5, 24, clustered_classes, time_limit=1e-9, device="cpu")
    assert res.stop_reason == "time_limit" and res.steps == 0


def test_privileged_code_is_a_labelled_code_that_a_bank_keeps(clustered_classes, tmp_bank):
    emb = ClassEmbeddings([f"class {i}" for i in range(24)], clustered_classes, source="planted")
    code = generate(5, 24, "privileged", PrivilegedOptions(embeddings=emb, semantic_weight=2.0, steps=30), seed=4,
                    context=RunContext(device="cpu"))
    assert (code.name, code.method, code.seed) == ("privileged-d5-k24-s4", "privileged", 4)
    write_code(tmp_bank, code)
    stored = read_code(tmp_bank)
    assert stored.labels == emb.names
    assert stored.settings["semantic_weight"] == 2.0 and stored.settings["steps_taken"] == 30
    report = semantic_report(stored, emb)
    assert report["triplet_agreement"] == semantic_agreement(code.prototypes, clustered_classes)["triplet_agreement"]


def test_class_means_files_are_checked(tmp_path):
    np.save(tmp_path / "means.npy", 2 * np.eye(3))
    np.testing.assert_array_equal(load_class_means(tmp_path / "means.npy"), np.eye(3))
    np.save(tmp_path / "flat.npy", np.ones(3))
    with pytest.raises(SpherecodesError, match=r"shape \(3,\); class means must be a numeric \(K, d\) array"):
        load_class_means(tmp_path / "flat.npy")
    (tmp_path / "text.npy").write_text("not numpy")
    with pytest.raises(SpherecodesError, match="is not a readable .npy file"):
        load_class_means(tmp_path / "text.npy")
    with pytest.raises(SpherecodesError, match="no such class-means file"):
        load_class_means(tmp_path / "absent.npy")


def test_assignment_reports_are_json_ready():
    import json

    result = assign_by_embeddings(random_code(12, 3), planted_clusters(12, 4, 3))
    report = json.loads(json.dumps(result.report(), allow_nan=False))
    assert sorted(report["order"]) == list(range(12)) and report["method"] == "quadratic"
    assert report["agreement_after"]["triplet_agreement"] == result.agreement_after["triplet_agreement"]
    text = format_assignment(result)
    assert text.startswith("quadratic assignment") and "triplet agreement" in text
