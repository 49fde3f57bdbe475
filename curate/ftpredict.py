"""fastText's supervised prediction in the compiled module: the language-ID model and the quality
classifier.

:func:`load` reads a fastText model file (the format of fastText 0.9's ``saveModel``: args,
dictionary, input matrix, output matrix) and, where the model is of a kind the compiled kernel
predicts exactly (supervised; hierarchical softmax or softmax; a product-quantized or a dense input
matrix; a dense output matrix; character and word n-grams of any length: ``lid.176.ftz`` and the
classifier of ``corpusmix curate train-quality``), returns a :class:`CompiledFastText`; otherwise
None, and the caller keeps fastText's own ``predict``.

The kernel (``ft_predict`` in ``curate/_native.c``) follows fastText's ``Dictionary::getLine``,
``Model::computeHidden``, ``HierarchicalSoftmaxLoss::dfs`` and ``SoftmaxLoss::computeOutput``
operation for operation, in single precision and in the same order, so its labels and
probabilities are the bits fastText returns for ``predict(text.replace("\\n", " "), k)``
(``tests/curate/test_ftpredict.py`` compares them on real and random text and on models trained
in the test). What it saves is fastText's reading of the text through a ``std::istream`` one
character at a time and a ``std::string`` per n-gram: a token's row ids are computed once and
cached. Quantized rows are decoded once at load (``norm * centroid``, the single float product
``ProductQuantizer::addcode`` forms before each addition); a dense matrix is read in place from
the file, mapped, and never copied.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from curate import native

MAGIC = 793712314
KSUB = 256
_SUP, _HS, _SOFTMAX = 3, 1, 3  # fastText's model_name::sup, loss_name::hs and ::softmax


class _Reader:
    def __init__(self, data: np.ndarray) -> None:
        self.b, self.p = data, 0

    def take(self, fmt: str) -> tuple:
        vals = struct.unpack_from("<" + fmt, self.b, self.p)  # type: ignore[call-overload]
        self.p += struct.calcsize("<" + fmt)
        return vals

    def array(self, dtype: str, n: int) -> np.ndarray:
        a = np.frombuffer(self.b, dtype, n, self.p)
        self.p += a.nbytes
        return a

    def cstring(self) -> bytes:
        """The NUL-terminated string at the cursor (a dictionary entry)."""
        width = 256
        while True:
            chunk = bytes(self.b[self.p: self.p + width])
            end = chunk.find(b"\0")
            if end >= 0:
                self.p += end + 1
                return chunk[:end]
            if self.p + width >= len(self.b):
                raise ValueError("not a fastText model: a dictionary entry runs to the end of the file")
            width *= 16


def _pq(r: _Reader) -> tuple[int, int, int, int, np.ndarray]:
    dim, nsubq, dsub, lastdsub = r.take("iiii")
    return dim, nsubq, dsub, lastdsub, r.array("<f4", dim * KSUB)


def _decode(codes: np.ndarray, m: int, pq: tuple, norms: np.ndarray | None) -> np.ndarray:
    """The m rows of a product-quantized matrix, each element ``norm * centroid`` in float32."""
    dim, nsubq, dsub, lastdsub, cent = pq
    codes = codes.reshape(m, nsubq)
    rows = np.empty((m, dim), np.float32)
    for q in range(nsubq):
        d = lastdsub if q == nsubq - 1 else dsub
        base = q * KSUB * dsub  # ProductQuantizer::get_centroids
        table = cent[base: base + KSUB * d].reshape(KSUB, d)
        rows[:, q * dsub: q * dsub + d] = table[codes[:, q]]
    if norms is not None:
        rows *= norms.astype(np.float32)[:, None]
    return rows


def _tree(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """HierarchicalSoftmaxLoss::buildTree: (left, right) of the 2n - 1 nodes, -1 at leaves."""
    n = len(counts)
    cnt = [int(c) for c in counts] + [10**15] * (n - 1)
    left, right = [-1] * (2 * n - 1), [-1] * (2 * n - 1)
    leaf, node = n - 1, n
    for i in range(n, 2 * n - 1):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and cnt[leaf] < cnt[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        cnt[i] = cnt[mini[0]] + cnt[mini[1]]
    return np.array(left, np.int32), np.array(right, np.int32)


class CompiledFastText:
    """A supervised fastText model predicted by the compiled kernel (see the module's docstring)."""

    def __init__(self, handle: object, labels: list[str], softmax: bool) -> None:
        self._handle = handle
        self.labels = labels
        self.softmax = softmax

    def predict(self, text: str) -> tuple[str, float] | None:
        """(label without ``__label__``, probability) as fastText's ``predict(text.replace("\\n", " "),
        k=1)`` of a hierarchical-softmax model; None where fastText predicts nothing."""
        got = native.compiled.ft_predict(self._handle, text)
        if got is None:
            return None
        return self.labels[got[0]], got[1]

    def probabilities(self, text: str) -> dict[str, float]:
        """{label: probability} as fastText's ``predict(text.replace("\\n", " "), k)`` with ``k`` >= the
        number of labels, of a softmax model ({} where fastText predicts nothing)."""
        got = native.compiled.ft_predict(self._handle, text)
        return {} if got is None else dict(zip(self.labels, got, strict=True))


def load(path: str | Path) -> CompiledFastText | None:
    """The model at ``path`` for the compiled kernel, or None (no compiled module, or a model of
    another kind: see the module's docstring)."""
    if native.compiled is None or not hasattr(native.compiled, "ft_predict"):
        return None
    data = np.memmap(path, dtype=np.uint8, mode="r")
    r = _Reader(data)
    magic, version = r.take("ii")
    if magic != MAGIC or version not in (11, 12):
        return None
    dim, _ws, _ep, _mc, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr, _t = r.take("iiiiiiiiiiiid")
    if model != _SUP or loss not in (_HS, _SOFTMAX):
        return None
    if version == 11:
        maxn = 0  # FastText::loadModel: old supervised models have no character n-grams
    size, nwords, nlabels, _ntokens, prune_size = r.take("iiiqq")
    words, counts, types = [], [], []
    for _ in range(size):
        words.append(r.cstring())
        c, t = r.take("qb")
        counts.append(c)
        types.append(t)
    pairs = r.array("<i4", 2 * max(prune_size, 0)).reshape(-1, 2)
    (quant_input,) = r.take("?")
    if quant_input:
        rows, m = _quantized(r, dim)
    elif prune_size >= 0:
        return None  # fastText refuses a pruned dictionary without a quantized matrix
    else:
        m, n = r.take("qq")
        rows = r.array("<f4", m * n) if n == dim else None
    (qout,) = r.take("?")
    if rows is None or qout:
        return None
    om, on = r.take("qq")
    softmax = loss == _SOFTMAX
    need = nlabels if softmax else nlabels - 1
    if on != dim or om < need or nlabels < 2:
        return None
    out = np.array(r.array("<f4", om * on)[: need * dim])
    if prune_size > 0:
        prune = np.full(bucket, -1, np.int32)
        prune[pairs[:, 0]] = pairs[:, 1]
        mode = 1
    else:
        prune, mode = np.zeros(0, np.int32), (0 if prune_size < 0 else -1)
    left, right = _tree([c for c, t in zip(counts, types, strict=True) if t == 1])
    # fastText's dense average copies the first row where its SIMD routine takes the width
    copy_first = int(not quant_input and dim in (16, 32, 64, 256, 512))
    handle = native.compiled.ft_model(
        (dim, minn, maxn, nwords, nlabels, bucket, m, mode, int(softmax), max(1, word_ngrams), copy_first,
         int(not quant_input)), rows, out, left, right, prune, words, np.array(types, np.int8))
    labels = [w.decode("utf-8", "replace").removeprefix("__label__") for w in words[nwords:nwords + nlabels]]
    return CompiledFastText(handle, labels, softmax)


def _quantized(r: _Reader, dim: int) -> tuple[np.ndarray | None, int]:
    """(decoded rows, their number) of a QuantMatrix (rows None: not of the model's width)."""
    qnorm, m, n, codesize = r.take("?qqi")
    codes = r.array("u1", codesize)
    pq = _pq(r)
    norms = None
    if qnorm:
        norm_codes = r.array("u1", m)
        npq = _pq(r)
        norms = npq[4][norm_codes.astype(np.int64)]  # get_centroids(0, code)[0]: dim 1
    if n != dim or pq[0] != dim:
        return None, m
    return np.ascontiguousarray(_decode(codes, m, pq, norms)), m
