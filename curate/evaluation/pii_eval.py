"""An evaluation set of real file shapes with labelled secrets, PII and hard negatives.

``EvalSet(seed).documents(n_per_kind)`` writes documents in the shapes real files have (``.env``
files, docker-compose and Kubernetes YAML, INI/TOML/JSON configs, bash and zsh history, Python /
PHP / C / Java / JS / Go code, web and application logs, Debian and Markdown changelogs, CSV
order tables, bibliographies) and returns them with labelled spans:

* ``{"start", "end", "label": "secret", "family": provider, "where": shape}``: values that must
  be redacted as secrets (provider token formats as each provider documents them, passwords in
  assignments / URLs / command lines / code);
* ``{"label": "pii", "type": "US_SSN" | "CREDIT_CARD" | "IBAN_CODE" | "PHONE_NUMBER", "sub": ...}``;
* ``{"label": "negative", "kind": ...}``: hard negatives (dates in national formats, Unix
  timestamps, versions, ISBN-10/13, ISSN, DOIs, EAN-13, order/invoice ids, port ranges, hashes,
  UUIDs, Luhn-invalid 16-digit references, byte counts, placeholders and references in secret
  positions) that must not be redacted.

Values come from Faker (an independent generator: passwords, names, dates, ISBNs, EANs, hashes,
UUIDs, SSNs, cards, phone numbers, user names, hosts) and from the token formats the providers
publish (prefix, length, alphabet); the file shapes follow the real formats (Debian changelog
policy, docker-compose, Kubernetes, AWS credentials file, zsh EXTENDED_HISTORY, bash
HISTTIMEFORMAT, nginx combined log). ``score(docs, detect)`` scores a detector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from curate.evaluation.pii_eval_values import Doc, Span, Values

__all__ = ["Doc", "Span", "Values", "documents", "score"]

def documents(seed: int, n_per_kind: int, kinds: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``n_per_kind`` documents of every file shape (``curate.evaluation.pii_eval_shapes.BUILDERS``)."""
    from curate.evaluation.pii_eval_shapes import BUILDERS

    v = Values(seed)
    return [BUILDERS[k](v).out() for k in (kinds or BUILDERS) for _ in range(n_per_kind)]


Detect = Callable[[str], Sequence[tuple[int, int, str]]]


def _covered(s: int, e: int, spans: Sequence[tuple[int, int, str]]) -> bool:
    pos = s
    for a, b, _ in sorted(spans):
        if a <= pos < b:
            pos = b
        if pos >= e:
            return True
    return pos >= e


def score(docs: Sequence[dict[str, Any]], preds: Sequence[Sequence[tuple[int, int, str]]]) -> dict[str, Any]:
    """Recall per secret family and per place (a secret counts when secret spans cover all of it),
    recall per PII type and sub-shape (a detection of that type overlaps it), and the share of
    hard negatives any detection touches, per kind."""
    tally: dict[str, dict[str, list[int]]] = {"secret_family": {}, "secret_where": {}, "password_where": {},
                                              "pii": {}, "pii_sub": {}, "negative": {}}
    missed: list[dict[str, Any]] = []

    def bump(group: str, key: str, ok: bool) -> None:
        row = tally[group].setdefault(key, [0, 0])
        row[0] += int(ok)
        row[1] += 1

    for doc, pred in zip(docs, preds, strict=True):
        secret = [p for p in pred if p[2].startswith("SECRET_")]
        for sp in doc["spans"]:
            s, e = sp["start"], sp["end"]
            if sp["label"] == "secret":
                ok = _covered(s, e, secret)
                bump("secret_family", sp["family"], ok)
                bump("secret_where", sp["where"], ok)
                if sp["family"] == "password":
                    bump("password_where", sp["where"], ok)
            elif sp["label"] == "pii":
                ok = any(t == sp["type"] and a < e and s < b for a, b, t in pred)
                bump("pii", sp["type"], ok)
                bump("pii_sub", f"{sp['type']}/{sp['sub']}", ok)
            else:
                ok = not any(a < e and s < b for a, b, _ in pred)
                bump("negative", sp["kind"], ok)
                if not ok:
                    hit = sorted({t for a, b, t in pred if a < e and s < b})
                    missed.append({"doc_kind": doc["kind"], "negative": sp["kind"], "flagged_as": hit,
                                   "text": doc["text"][max(0, s - 30):e + 10]})
                continue
            if not ok:
                missed.append({"doc_kind": doc["kind"], "label": sp.get("family") or sp.get("type"),
                               "where": sp.get("where") or sp.get("sub"),
                               "text": doc["text"][max(0, s - 40):e + 10]})
    out: dict[str, Any] = {}
    for group, rows in tally.items():
        if group == "negative":
            out["negative_flag_rate"] = {k: round(1 - v[0] / v[1], 4) for k, v in sorted(rows.items())}
            out["negative_counts"] = {k: v[1] for k, v in sorted(rows.items())}
            flagged = sum(v[1] - v[0] for v in rows.values())
            total = sum(v[1] for v in rows.values())
            out["negatives_flagged"] = f"{flagged}/{total}"
            out["negative_flag_rate_all"] = round(flagged / total, 4) if total else 0.0
        else:
            out[group] = {k: {"recall": round(v[0] / v[1], 4), "n": v[1]} for k, v in sorted(rows.items())}
    fam = tally["secret_family"]
    found, total = sum(v[0] for v in fam.values()), sum(v[1] for v in fam.values())
    out["secret_recall_all"] = round(found / total, 4) if total else 1.0
    out["secrets"] = f"{found}/{total}"
    out["errors"] = missed
    return out
