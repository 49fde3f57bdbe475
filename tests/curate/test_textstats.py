"""The fast document statistics equal, bit for bit, the straightforward per-token definitions.

``reference_stats`` below is the plain implementation the filters were calibrated and tested with
(one Python pass per statistic over every token); ``curate.textstats.doc_stats`` computes the
same values over distinct tokens, with numpy for character counts and word-pair sums. Decisions
of the ``auto`` filter depend on these floats, so they must be identical, not close.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from collections import Counter
from itertools import groupby
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import junkstats as js
from curate import ocrstats
from curate import textstats as ts

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
_SPACES = re.compile(r"\s+")


def reference_entropy(text: str) -> float:
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def reference_pairs(model: ts.WordOrderModel, text: str, min_pairs: int = 12) -> tuple[float | None, int]:
    ids = [model.index.get(w, model.other) for w in ts._WORD.findall(text[:ts.MAX_ORDER_CHARS].lower())]
    total, n, o = 0.0, 0, model.other
    for a, b in zip(ids, ids[1:], strict=False):
        if a != o or b != o:
            total += model.pmi[a][b]
            n += 1
    return (total / n if n >= min_pairs else None), n


def reference_segments(text: str, short_only: bool = True) -> list[str]:
    out = []
    for seg in ts._SEGMENT_SPLIT.split(text[:ts.COMPRESS_PREFIX]):
        seg = _SPACES.sub(" ", seg).strip().lower()
        if len(seg) >= 2 and (not short_only or len(seg) <= ts.SHORT_SEGMENT):
            out.append(seg)
    return out


def reference_is_dict_token(tok: str, words: frozenset[str], short: frozenset[str]) -> bool:
    """The dictionary-word rule by letter runs, without the all-letters shortcut of ``ts._is_dict_token``."""
    return ts._core_in_dict(tok.strip(ts._EDGE_PUNCT).lower(), words, short)


def reference_mojibake(text: str) -> float:
    from ftfy.badness import BADNESS_RE

    head = text[:js.MOJIBAKE_PREFIX]
    if head.isascii() or not js.MOJIBAKE_CHARS.search(head):
        return 0.0
    return 1000.0 * (len(BADNESS_RE.findall(head)) + head.count("\ufffd") + js.mixed_tokens(head)) / max(1, len(head))


def reference_stuffing(tokens: list[str], lang: str | None, d) -> float | None:
    if d is None:
        return None
    stop = js.stopwords(lang)
    content = [t.lower() for t in tokens
               if len(t) > 2 and reference_is_dict_token(t, *d) and t.lower() not in stop]
    if len(content) < 40:
        return None
    return sum(c for _, c in Counter(content).most_common(3)) / len(content)


def reference_rep_ngrams(lows: list[str], n: int = 5) -> float | None:
    if len(lows) < 40:
        return None
    grams = [tuple(lows[i:i + n]) for i in range(len(lows) - n + 1)]
    counts = Counter(grams)
    covered = set()
    for i, g in enumerate(grams):
        if counts[g] >= 2:
            covered.update(range(i, i + n))
    return len(covered) / len(lows)


def reference_stamped(lines: list[str]) -> float | None:
    if len(lines) < 8:
        return None
    head = lines[:js.MAX_LINES]
    return sum(js._STAMP.search(ln[:40]) is not None for ln in head) / len(head)


def reference_line_starts(lines: list[str]) -> float | None:
    if len(lines) < 8:
        return None
    head = lines[:js.MAX_LINES]
    starts = set()
    for ln in head:
        t = ln.split()
        if len(t) > 1 and not any(c.isalnum() for c in t[0]):
            t = [t[0] + " " + t[1]] + t[2:]
        key = t[0] + " " + t[1] if len(t) > 1 and t[1].isalpha() else t[0]
        starts.add(re.sub(r"\d+", "0", key.lower()))
    return len(starts) / len(head)


def reference_labels(lines: list[str], stop: frozenset[str]) -> tuple[float | None, float | None]:
    """Navigation labels, one segment at a time (curate.junkstats.label_share's definition)."""
    segs = []
    for ln in lines[:js.MAX_SEGMENTS]:
        segs.extend(x for x in re.split(r"\s*[·|•»›]\s*", ln.strip()) if x)
    segs = [x for x in segs if len(x) >= 2]
    if len(segs) < 8:
        return None, None
    labels = []
    for seg in segs:
        body = re.sub(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[ivx]+\.)\s+", "", seg, count=1)
        words = body.split()
        if re.fullmatch(r"[A-Za-z_][\w.]*\(\)", body) or (
                body and body[0].isupper() and not body.endswith((*js.TERMINAL, ",")) and len(words) <= 7
                and not re.search(r"[=(){};<>\[\]$%@#\\/:\d]", body)
                and (len(words) <= 2 or sum(w.lower() in stop for w in words) <= 1)):
            labels.append(seg)
    return len(labels) / len(segs), sum(map(len, labels)) / sum(map(len, segs))


def reference_damaged(tokens: list[str], lang: str, d: tuple) -> int | None:
    """Damaged words counted token by token (curate.ocrstats' definition: the per-word judgements
    of its index, the document-level aggregation written out plainly)."""
    idx = ocrstats.near_miss_index(lang)
    if idx is None:
        return None
    edge = ts._EDGE_PUNCT
    cores = [t.strip(edge) for t in tokens]
    present = {t.lower().strip(edge) for t in tokens}
    raw_counts = Counter(tokens)
    damaged = 0
    rank = idx.rank
    marks = ocrstats._MARKS
    for tok, c in raw_counts.items():
        core = tok.strip(ocrstats._EDGE)
        if c > 1 or len(tok) < 2 or len(core) < 2 or (len(core) > 2 and core.isalpha() and core.islower()):
            continue
        readings = {core.translate(r) for r in ocrstats._READINGS}
        if re.fullmatch(r"[a-z]+[A-Z]{2,}", core):
            damaged += 1
        elif len(core) == 2:
            if re.fullmatch(r"[a-z][0-9]|[0-9][a-z]", core) and core[1] not in "bdhkmsx":  # 1s, 5m: quantities
                damaged += any(w.isalpha() and rank.get(w, 100) < ocrstats.FUNCTION_WORDS for w in readings)
            elif core.isalpha() and core.islower() and not core.isascii():
                plain = ocrstats.deaccent(core)
                damaged += plain.isascii() and rank.get(plain, 1000) < ocrstats.COMMON_WORDS and core not in rank
        elif re.fullmatch(r"(?=[a-z0-9]*[a-z])(?=[a-z0-9]*[0-9])[a-z0-9]{3,}", core):
            damaged += any(w.isalpha() and len(w) > 2 and w in present for w in readings)
        elif sum(ch in marks for ch in core) == 1 and all(ch.isascii() and ch.islower() for ch in core if ch not in marks):
            mark = next(i for i, ch in enumerate(core) if ch in marks)
            quotes_kept = "".join(ch for ch in ocrstats._EDGE if ch not in "'\u2019")
            if core[mark] == "\u2018" and 0 < mark < len(core) - 1 and tok.rstrip(quotes_kept)[-1:] in ("'", "\u2019"):
                continue  # a quotation glued to the word before it
            letters = core[:mark] + core[mark + 1:]
            inner = 0 < mark < len(core) - 1
            edge = core[mark] not in ocrstats.EDGE_PUNCT and len(letters) >= 3
            joined = inner and all((len(w) > 1 or w in "ai") and w in rank for w in (core[:mark], core[mark + 1:]))
            damaged += (inner or edge) and len(letters) > 2 and letters in rank or (joined and letters not in rank)
        elif re.fullmatch(r"[a-z]{2,}\.[a-z]{2,}", core):  # a full stop where a space belongs
            a, b = core.split(".")
            damaged += a in rank and b in rank and ((lang == "en" and a in ocrstats.OPEN_WORDS)
                                                     or rank[b] < ocrstats.FUNCTION_WORDS)
        elif re.fullmatch(r"([a-z]{2,}|a|i)['\u2019][a-z]{3,}", core):  # an apostrophe where a space belongs
            a, b = re.split("['\u2019]", core)
            damaged += a in rank and b in rank and a + b not in rank
    oov_positions = [i for i, (t, c) in enumerate(zip(tokens, cores, strict=True))
                     if len(c) > 2 and c.isalpha() and c.islower() and not reference_is_dict_token(t, *d)
                     and not (i > 0 and len(tokens[i - 1]) > 1 and tokens[i - 1][-1] == "-"
                              and tokens[i - 1][-2].isalpha())]  # the second half of a hyphenated word
    oov_counts = Counter(cores[i] for i in oov_positions)
    targets: set[str] = set()
    for w in list(oov_counts)[:ocrstats.MAX_CANDIDATES]:
        if oov_counts[w] > 1:
            continue
        plain = ocrstats.deaccent(w)
        if plain != w and plain.isascii() and rank.get(plain, 1000) < ocrstats.COMMON_WORDS:  # accents misread
            damaged += 1
            continue
        split, near1, near2 = idx.judge(w)
        if split or (near1 and min(idx.rank[x] for x in near1) < ocrstats.COMMON_WORDS):
            damaged += 1
            continue
        hit = [x for x in near2 if x in present]
        if hit and not targets.intersection(hit):
            targets.update(hit)
            damaged += 1
        elif len(w) >= ocrstats.LONG_NEAR_LETTERS and near1:  # a long word one edit from a frequent one
            damaged += 1
    last = -2
    for i in oov_positions[:ocrstats.MAX_SPLIT_ANCHORS]:
        for a, b in ((i - 1, i), (i, i + 1)):
            if a <= last or a < 0 or b >= len(tokens):
                continue
            x, y = tokens[a].lstrip(ocrstats._EDGE), tokens[b].rstrip(ocrstats._EDGE)
            if x.isalpha() and y.isalpha() and x.islower() and y.islower() and len(x) + len(y) >= 5 and x + y in d[0]:
                damaged += 1
                last = b
                break
    return damaged


def reference_stray_stops(text: str, lang: str) -> int:
    """curate.ocrstats.stray_stops written out character by character."""
    n = 0
    if lang == "en":  # an open word, a full stop, then a lower-case word on the same line
        for line in text.split("\n"):
            toks = re.split(r"[ \t]+", line)
            n += sum(1 for x, y in zip(toks, toks[1:], strict=False)
                     if x[:-1] in ocrstats.OPEN_WORDS and x.endswith(".") and y[:1].isascii() and y[:1].islower())
    for k, ch in enumerate(text):  # a stop alone: word, one space, the stop, spaces, a lower-case letter
        if ch not in ".," or k < 2 or text[k - 1] != " " or not (text[k - 2].isascii() and text[k - 2].isalpha()):
            continue
        j = k + 1
        while j < len(text) and text[j] in " \t":
            j += 1
        word_start = k - 2
        while word_start > 0 and text[word_start - 1].isascii() and text[word_start - 1].isalpha():
            word_start -= 1
        if j > k + 1 and j < len(text) and "a" <= text[j] <= "z" and text[word_start:k - 1] != "from":
            n += 1
    closing = sum(1 for k, ch in enumerate(text)
                  if ch == "\u2019" and not (k + 1 < len(text) and text[k + 1].isascii() and text[k + 1].isalpha()))
    return n + max(0, text.count("\u2018") - closing)


def reference_stats(text: str, lang: str | None, order: ts.WordOrderModel | None,
                    frequent: frozenset[str] | None) -> dict:
    n_chars = len(text)
    if any(ch * 3 in text for ch in "\u2500\u2501\u2550\u2504\u2505"):  # a drawn table: no box characters
        spaced = "".join(" " if 0x2500 <= ord(ch) < 0x2580 else ch for ch in text)
        runs = [(blank, "".join(g)) for blank, g in groupby(spaced, key=lambda ch: ch in " \t")]
        text = "".join(" " if blank and len(r) > 1 else r for blank, r in runs)  # 2+ spaces and tabs: one
    tokens = text.split()
    n = len(tokens)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    n_lines = len(lines) or 1
    raw = text.encode("utf-8")[:ts.COMPRESS_PREFIX]
    out: dict = {"n_words": float(n), "n_chars": float(n_chars), "n_lines": float(len(lines)),
                 "words_per_line": n / n_lines,
                 "line_punct_share": sum(ln.rstrip().endswith(ts._TERMINAL) for ln in lines) / n_lines,
                 "compress_ratio": len(raw) / len(zlib.compress(raw, 6)) if raw else 0.0,
                 "char_entropy": reference_entropy(text[:ts.COMPRESS_PREFIX]),
                 "mojibake": reference_mojibake(text)}
    if n == 0:
        out.update(mean_word_len=0.0, alpha_share=0.0, dict_share=None, dup_line_share=0.0,
                   top_word_share=0.0, vocab_richness=None, word_order=None, word_pairs=0,
                   stuffing=None, rep_ngram_share=None, stamped_share=None, line_start_variety=None,
                   oov_share=None, plain_share=0.0, stop_share=None, damaged_share=None, damaged_words=None)
        out["label_share"], out["label_char_share"] = reference_labels(lines, js.stopwords(lang) if lang else frozenset())
        return out
    out["mean_word_len"] = sum(map(len, tokens)) / n
    out["alpha_share"] = sum(1 for t in tokens if any(c.isalpha() for c in t)) / n
    d = ts.dictionary(lang) if lang else None
    if d is None:
        out["dict_share"] = None
    else:
        hits = sum(len(t) for t in tokens if reference_is_dict_token(t, *d))
        out["dict_share"] = hits / sum(map(len, tokens))
    plain = [t for t in tokens if len(t.strip(ts._EDGE_PUNCT)) > 2 and t.strip(ts._EDGE_PUNCT).isalpha()
             and t.strip(ts._EDGE_PUNCT).islower()]
    out["plain_share"] = len(plain) / n
    out["oov_share"] = (sum(not reference_is_dict_token(t, *d) for t in plain) / len(plain)
                        if d is not None and len(plain) >= 30 else None)
    stop = js.stopwords(lang) if d is not None else None
    out["stop_share"] = sum(t.lower() in stop for t in tokens) / n if stop is not None else None
    out["stuffing"] = reference_stuffing(tokens, lang, d)
    out["rep_ngram_share"] = reference_rep_ngrams([t.lower() for t in tokens])
    dmg = reference_damaged(tokens, lang, d) if d is not None and len(plain) >= ocrstats.DAMAGED_MIN_WORDS else None
    if dmg is not None:
        dmg += reference_stray_stops(text, lang)
    out["damaged_words"] = float(dmg) if dmg is not None else None
    out["damaged_share"] = dmg / len(plain) if dmg is not None else None
    out["label_share"], out["label_char_share"] = reference_labels(lines, js.stopwords(lang) if lang else frozenset())
    out["stamped_share"] = reference_stamped(lines)
    out["line_start_variety"] = reference_line_starts(lines)
    seen: set[str] = set()
    dup = 0
    for ln in lines:
        s = ln.strip()
        if s in seen:
            dup += len(s)
        else:
            seen.add(s)
    out["dup_line_share"] = dup / max(1, sum(len(ln.strip()) for ln in lines))
    counts = Counter(t.lower() for t in tokens if len(t) > 2)
    if counts:
        w, c = max(counts.items(), key=lambda x: (x[1] * len(x[0]), x[0]))
        out["top_word_share"] = c * len(w) / max(1, sum(len(t) for t in tokens))
    else:
        out["top_word_share"] = 0.0
    out["vocab_richness"] = len({t.lower() for t in tokens}) / math.sqrt(n) if n >= 30 else None
    out["word_order"], out["word_pairs"] = reference_pairs(order, text) if order is not None else (None, 0)
    if frequent is not None:
        segs = reference_segments(text, short_only=False)
        total = sum(map(len, segs))
        share = sum(len(s) for s in segs if len(s) <= ts.SHORT_SEGMENT and s in frequent) / total if total else 0.0
        out["boilerplate_share"], out["n_segments"] = share, float(len(segs) if total else 0)
    return out


def _texts() -> list[tuple[str, str]]:
    rows = []
    for f in sorted((DEMO / "en").glob("*.parquet")) + sorted((DEMO / "foreign").glob("*.parquet")):
        t = pq.read_table(f, columns=["text", "lang"]).to_pylist()
        rows += [(r["text"], r["lang"]) for r in t[::7]]  # every 7th document of every file: ~1,000 texts
    edge = ["", " ", "\n\n\n", "a", "Ünïcödé  text\twith\u00a0spaces\u2003and İstanbul ǅ", "x " * 40,
            "menu · home | about » contact\n" * 12, "½ ² ³ 12,5 café\r\ncafé", "\x1c\x1dword\x1e\x1f",
            "line one.\nline one.\nline two!\n" * 5, "The of the and of a to in " * 30,
            "".join(f"2024-01-0{i % 9 + 1} 10:00:0{i % 10} INFO started worker {i}\n" for i in range(30)),
            "Setting up libfoo (1.0) ...\nUnpacking libbar:amd64 ...\n" * 10, "cafÃ© MÃ¼nchen â€™ \ufffd " * 9,
            "buy cheap watches online best cheap watches deals " * 12,
            "ΓÇÿconfig.guessΓÇÖ and Б─≤-X LISTБ─≥ by Timo R√∂hling, not café or Привет " * 5]
    return rows + [(e, "en") for e in edge] + [(e, "xx") for e in edge[:4]]


@pytest.fixture(scope="module")
def model_and_segments() -> tuple[ts.WordOrderModel, frozenset[str]]:
    texts = [t for t, _ in _texts()]
    model = ts.WordOrderModel.from_dict(ts.WordOrderModel.fit(texts[::3], k=100).to_dict())
    df: Counter[str] = Counter(s for t in texts for s in set(ts.segments(t)))
    return model, frozenset(s for s, n in df.items() if n >= 3)


def test_doc_stats_identical_to_reference(model_and_segments) -> None:
    model, frequent = model_and_segments
    texts = _texts()
    assert len(texts) > 800
    for text, lang in texts:
        for order, freq in ((model, frequent), (None, None)):
            got = ts.doc_stats(text, lang, order, freq)
            want = reference_stats(text, lang, order, freq)
            assert got == want, (text[:80], {k: (got.get(k), want.get(k)) for k in want if got.get(k) != want.get(k)})


def test_pieces_identical(model_and_segments) -> None:
    model, _ = model_and_segments
    for text, _ in _texts():
        assert ts.char_entropy(text) == reference_entropy(text)
        assert model.score_pairs(text) == reference_pairs(model, text)
        assert ts.segments(text, short_only=False) == reference_segments(text, short_only=False)


def test_whitespace_split_matches_regex() -> None:
    # segments() relies on str.split() and re's \s agreeing on every code point
    space = re.compile(r"\s")
    assert [c for c in range(sys.maxunicode + 1) if bool(space.match(chr(c))) != chr(c).isspace()] == []


def test_dictionary_shortcut_is_the_rule() -> None:
    """Tokens whose core is all letters skip the letter-run regex: same verdict as the full rule,
    on demo words and on tokens mixing cases, digits, marks, ligatures and other scripts."""
    import random

    d = ts.dictionary("en")
    assert d is not None
    rng = random.Random(0)
    alphabet = "aAbZez_9'-.\u00e9\u0130\u00df\u017f\u01c5\u00b2\u00bd\u216b\u0663\u0131\u0307\ufb01\u3042\u05d0"
    tokens = {"", "a", "of", "I", "Xy", "don't", "self.name", "co-operate", "9fa3c0e1", "dP.", "\u0130stanbul"}
    tokens |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(20_000)}
    for f in sorted((DEMO / "en").glob("*.parquet")):
        for text in pq.read_table(f, columns=["text"]).column("text").to_pylist()[:50]:
            tokens.update(text.split())
    assert len(tokens) > 20_000
    assert all(ts._is_dict_token(t, *d) == reference_is_dict_token(t, *d) for t in tokens)


def _segments_by_the_whitespace_pattern(text: str, short_only: bool = True) -> list[str]:
    """The definition of ``segments``: split at separators together with the whitespace around them."""
    out = []
    for seg in re.split(r"\s*(?:[·|•»›]|\n)\s*", text[:ts.COMPRESS_PREFIX]):
        seg = " ".join(seg.split()).lower()
        if len(seg) >= 2 and (not short_only or len(seg) <= ts.SHORT_SEGMENT):
            out.append(seg)
    return out


def test_segments_equal_the_whitespace_pattern_split():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=1500, deadline=None)
    @given(st.text(alphabet="ab C.\n\r\t |·•»›\u00a0\u2028\u3000\x1c\x85", max_size=60), st.booleans())
    def check(text: str, short_only: bool) -> None:
        assert ts.segments(text, short_only=short_only) == _segments_by_the_whitespace_pattern(text, short_only)

    check()


def _line_start_variety_reference(lines: list[str]) -> float | None:
    """The definition of ``line_start_variety``, one start at a time."""
    if len(lines) < 8:
        return None
    head = lines[:js.MAX_LINES]
    starts = set()
    for ln in head:
        t = ln.split(None, 3)
        if len(t) > 1 and not any(c.isalnum() for c in t[0]):
            t = [t[0] + " " + t[1], *t[2:]]
        starts.add(re.sub(r"\d+", "0", (t[0] + " " + t[1] if len(t) > 1 and t[1].isalpha() else t[0]).lower()))
    return len(starts) / len(head)


def test_line_start_variety_and_label_share_equal_their_definitions():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    line = st.text(alphabet="aB1١½ 	*-|·İß()xyZ.:", min_size=1, max_size=20).filter(str.strip)

    @settings(max_examples=800, deadline=None)
    @given(st.lists(line, min_size=0, max_size=30))
    def check(lines: list[str]) -> None:
        assert js.line_start_variety(lines) == _line_start_variety_reference(lines)
        segs: list[str] = []
        for ln in lines[:js.MAX_SEGMENTS]:
            s = ln.strip()
            segs.extend([s] if js._SEPARATORS.search(s) is None else [x for x in js._SEPARATORS.split(s) if x])
        segs = [s for s in segs if len(s) >= 2]
        want = (None, None) if len(segs) < 8 else (
            sum(js._is_label(s, frozenset({"the", "of"})) for s in segs) / len(segs),
            sum(len(s) for s in segs if js._is_label(s, frozenset({"the", "of"}))) / sum(map(len, segs)))
        assert js.label_share(lines, frozenset({"the", "of"})) == want

    check()


def test_memo_keeps_its_first_entries_and_the_recent_ones() -> None:
    """The calibration's entries come first and stay; the recent ones are there to be read again
    right after they were put (the inspection re-reads a step's results)."""
    from curate.textstats import Memo

    memo = Memo(max_items=6)
    for k in range(100):
        memo.put(k, k * k)
        assert memo.get(k) == k * k  # just put: there
    assert [memo.get(k) for k in range(3)] == [0, 1, 4]  # the first half, kept
    assert memo.get(50) is None  # an old recent one, gone
    assert len(memo.items) == 3 and len(memo.recent) <= 3


def test_text_key_is_the_digest_of_the_text_whichever_object_holds_it() -> None:
    import hashlib

    from curate.textstats import text_key

    texts = [f"text {i} é" for i in range(3000)]
    for t in texts + texts[::-1] + ["".join(list(t)) for t in texts[:50]]:
        assert text_key(t) == hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest()
