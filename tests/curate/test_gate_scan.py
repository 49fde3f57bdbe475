"""The compiled gate scan of the PII and secrets passes (curate/steps/gate_scan.py).

A gate may only rule a detector out where the detector cannot match: each superset pattern is
checked against the pattern it stands for on random text built from the characters where Python
and byte-level matching differ (non-ASCII digits and spaces, the long s and dotless i that
IGNORECASE matches, the Kelvin sign), and both engines must answer the same.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable

import pytest

from curate.steps import gate_scan
from curate.steps.gate_scan import GateScan, folded, literal
from curate.steps.secrets import _KEYWORD_HINT, _LONG, _LOW_SUPERSETS, _SCAN_SHAPES, SecretsDetector
from curate.steps.secrets_context import _KV_GATE, _PARAM_CRED, ContextSecrets, context_patterns

try:
    import hyperscan  # noqa: F401
    HAVE_HYPERSCAN = True
except ImportError:  # the re engine's tests still run; the engine comparisons need the wheel
    HAVE_HYPERSCAN = False
needs_hyperscan = pytest.mark.skipif(not HAVE_HYPERSCAN, reason="the hyperscan wheel is not installed here")

# characters on which bytes and str matching part ways, plus what the patterns look for
ALPHABET = (list("abcdefkpsitonyw") + list("ACKINOPSTWXYZ") + list("0123456789") + list(" \t\n=:;?&'\"_-.,()[]")
            + ["\u017f", "\u0131", "\u212a", "\u0663", "\u00a0", "\u2003", "\x1c", "é", "ß", "中"])
WORDS = ["pass", "password", "token", "key", "secret", "api_key", "access_token", "AKIA", "ASIA", "AC", "SK",
         "cloudant", "cloudant.com", "clou_apikey", "sig", "user_", "signature", "AKC", "APB", "auth", "cred", "pwd"]


def _pieced_texts(n: int, seed: int, *, parts: int, p_pool: float, pick: Callable[[random.Random], str],
                  chars: tuple[int, int], sep: Callable[[random.Random], str]) -> list[str]:
    """``n`` texts of 1..``parts`` pieces: with probability ``p_pool`` ``pick(rng)``, else a run of
    random ``ALPHABET`` characters of a length in ``chars``; joined by ``sep(rng)``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        pieces = []
        for _ in range(rng.randint(1, parts)):
            if rng.random() < p_pool:
                pieces.append(pick(rng))
            else:
                pieces.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(*chars))))
        out.append(sep(rng).join(pieces))
    return out


def _random_texts(n: int, seed: int) -> list[str]:
    def pick(rng: random.Random) -> str:
        w = rng.choice(WORDS)
        return w.upper() if rng.random() < 0.2 else w

    return _pieced_texts(n, seed, parts=12, p_pool=0.35, pick=pick, chars=(1, 70), sep=lambda rng: "")


def _mutate(word: str, rng: random.Random) -> str:
    """``word`` with letters upper-cased or swapped for what IGNORECASE also matches."""
    swap = {"s": "\u017f", "i": "\u0131", "k": "\u212a"}
    return "".join(swap[c] if c in swap and rng.random() < 0.2 else c.upper() if rng.random() < 0.3 else c
                   for c in word)


def _shaped_texts(n: int, seed: int) -> list[str]:
    """Name/value shapes the context gates look for, with random identifiers, quotes and spaces."""
    rng = random.Random(seed)
    names = ["password", "passwd", "pwd", "pass", "access_token", "accesstoken", "auth_token", "token", "api_key",
             "apikey", "secret", "client_secret", "sig", "signature", "private_token", "key", "cred"]
    spaces = [" ", "\t", "\u00a0", "\u2003", "\x1c", ""]
    ident = list("abcXYZ019_.-") + ["\u0663", "é", "ß", "中"]
    out = []
    for _ in range(n):
        word = _mutate(rng.choice(names), rng)
        tail = "".join(rng.choice(ident) for _ in range(rng.randint(0, 34)))
        q1, q2 = rng.choice("\"'"), rng.choice("\"'")
        sp = "".join(rng.choice(spaces) for _ in range(rng.randint(0, 3)))
        out.append(rng.choice(["x", "?", "&", ";", " "]) + (rng.choice(["user_", "USER", "u\u017fer"])
                                                            if rng.random() < 0.2 else "")
                   + word + rng.choice(["=v", "=", tail + q1 + sp + "," + sp + q2, tail + "=" + tail]))
    return out


def _low(text: str) -> str:
    low = text.lower()
    assert len(low) == len(text)  # no U+0130 in the alphabet: the gates are open for such texts
    return low


def _data(text: str) -> bytes:
    return _low(text).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("source", sorted(_LOW_SUPERSETS))
def test_each_gate_superset_matches_wherever_its_pattern_does(source: str) -> None:
    rx = next(w for g in __import__("curate.steps.secrets", fromlist=["GATES"]).GATES.values()
              for how, what in g for w in ([what] if how in ("rx", "long") else [x for _, x in what]
                                           if how == "all" else []) if w.pattern == source)
    sup = re.compile(_LOW_SUPERSETS[source].encode(), re.DOTALL)
    hits = 0
    for text in _random_texts(1500, seed=len(source)):
        # the gate pattern runs on the text (rx) or on its long tokens (long); either is in the text
        if rx.search(text) or rx.search(" ".join(t for t in text.split() if len(t) >= _LONG)):
            hits += 1
            assert sup.search(_data(text)), (source, text)
    # planted matches of every pattern, so the check is not vacuous
    for text in ["AKCp5e2gMx8TUeQ3", "xAPBsomething12 z", "AKIA" + "Q" * 16, "a" * 64, "clou_apikey=",
                 "see cloudant.com", "M" + "a" * 24 + ".", "M" + "a" * 24 + ".b\u0663cdef." + "c" * 27, "k" * 44, "key: " + "x" * 44, "ab" * 24,
                 "\u0663" * 8 + ":", "AC" + "a" * 32, "key\u017f" + "a" * 44,
                 "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
                 "AW\u017f pa\u017f\u017f: \"" + "\u017f" * 20 + "ab" * 10 + "\"", "https://us{er:p\u00e9w@host",
                 "ftp://me:\u2003x@h", "0123456789abcdef" * 2 + "-us12"]:
        if rx.search(text):
            hits += 1
            assert sup.search(_data(text)), (source, text)
    assert hits > 0


@pytest.mark.parametrize(("name", "rx", "on_low"), [
    ("@param", _PARAM_CRED, False), ("@kv", _KV_GATE, True), ("@hint", re.compile(context_patterns()["@hint"]), True)])
def test_context_gate_supersets(name: str, rx: re.Pattern[str], on_low: bool) -> None:
    sup = re.compile(context_patterns()[name].encode(), re.DOTALL)
    extra = ["?pa\u017f\u017fword=x", "&ap\u0131_key=1", ";TOKEN=abc", "pass_x' , 'y", "key\u00a0'\u2003,'z"]
    hits = 0
    for text in _random_texts(1000, seed=7) + _shaped_texts(3000, seed=8) + extra:
        if rx.search(_low(text) if on_low else text):
            hits += 1
            assert sup.search(_data(text)), (name, text)
    assert hits > 20


def test_shape_gates_long_tokens_and_keyword_lines() -> None:
    long_rx = re.compile(_SCAN_SHAPES["@long"].encode())
    line_rx = re.compile(_SCAN_SHAPES["@keyword_line"].encode())
    for text in _random_texts(3000, seed=11) + ["x" * _LONG, "\u017f" * _LONG, "pass = 'x'", "'x' + key"]:
        if any(len(t) >= _LONG for t in text.split()):
            assert long_rx.search(_data(text)), text
        low = _low(text)
        if any(_KEYWORD_HINT.search(line) and re.search("['\"`]", line) for line in low.split("\n")):
            assert line_rx.search(_data(text)), text


@needs_hyperscan
def test_both_engines_find_the_same_gates() -> None:
    patterns = SecretsDetector()._scan
    hs = GateScan(dict(zip(patterns.names, patterns.sources, strict=True)), engine="hyperscan")
    py = GateScan(dict(zip(patterns.names, patterns.sources, strict=True)), engine="re")
    assert hs.uses_hyperscan and not py.uses_hyperscan
    py_open = GateScan(dict(zip(patterns.names, patterns.sources, strict=True)), engine="re",
                       open_on_re=patterns.open_on_re)
    assert patterns.open_on_re  # the line-long shapes
    texts = _random_texts(1500, seed=3) + _shaped_texts(500, seed=4) + ["lone \ud800 password='x'", "", "İ" * 3]
    for text in texts:
        assert hs.present(text.lower()) == py.present(text.lower()), text
        # an open gate is reported present; every other gate as found
        assert py_open.present(text.lower()) == py.present(text.lower()) | patterns.open_on_re, text


def test_the_re_engine_stays_linear_on_one_long_line() -> None:
    import time

    gates = SecretsDetector()._scan
    scan = GateScan(dict(zip(gates.names, gates.sources, strict=True)), engine="re", open_on_re=gates.open_on_re)
    line = ("passkey token=" * 20000 + "\u0663" * 50000 + "m" * 100000)
    t0 = time.perf_counter()
    scan.present(line)
    assert time.perf_counter() - t0 < 20.0


@needs_hyperscan
def test_detections_do_not_depend_on_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
             "mysql -u root -pS3cr3tPassw0rd db", "conn = psycopg2.connect('postgres://u:pw9Xk2q@h/db')",
             "GOOGLE_API_KEY=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "İSTANBUL token: 'aZ9xQ2mP7kL3vB8n'"]
    texts += _random_texts(300, seed=5)
    detector = SecretsDetector()
    assert detector._scan.uses_hyperscan
    with_hs = [detector.detect(t) for t in texts]
    monkeypatch.setattr(gate_scan, "_hyperscan", lambda: None)
    fallback = SecretsDetector()
    assert not fallback._scan.uses_hyperscan
    assert [fallback.detect(t) for t in texts] == with_hs
    assert sum(map(len, with_hs)) >= 5


def test_the_scan_pickles_and_rebuilds() -> None:
    import pickle

    scan = GateScan({"a": literal("pass"), "b": folded("sig")})
    assert scan.present("x pa\u017f\u017f sig") == {"b"}
    again = pickle.loads(pickle.dumps(scan))
    assert again.present("password") == {"a"}
    ctx = pickle.loads(pickle.dumps(ContextSecrets()))
    assert ctx.detect("password = 'hunter2-Xk9'\n") == [(12, 23, "SECRET_PASSWORD")]


def test_unknown_engine_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="engine"):
        GateScan({"a": "x"}, engine="pcre")


def test_long_gates_searched_on_the_text_answer_as_on_the_long_tokens() -> None:
    from curate.steps.secrets import _TEXT_EQUIVALENT, GATES

    longs = {w.pattern: w for g in GATES.values() for how, what in g
             for h, w in ([(how, what)] if how != "all" else what) if h == "long"}
    assert _TEXT_EQUIVALENT <= set(longs)
    for source in _TEXT_EQUIVALENT:
        rx = longs[source]
        assert re._parser.parse(rx.pattern, rx.flags).getwidth()[0] >= _LONG, source
        assert not re.search(r"\\s|\\W|\\D|\\S|\[\^| |(?<!\\)\.", source.replace("\\.", "")), source
        texts = _random_texts(800, seed=len(source)) + ["AKIA" + "Q" * 16, "M" + "a" * 24 + ". x", "N" + "a" * 23 + ".bcdefg." + "c" * 27,
                                                        "a" * 24, "AC" + "b" * 32, "k" * 44, "ab" * 24]
        for text in texts:
            long_text = " ".join(t for t in text.split() if len(t) >= _LONG)
            assert (rx.search(text) is None) == (rx.search(long_text) is None), (source, text)


def test_the_hint_line_gate_holds_wherever_the_hint_loop_reads_a_line() -> None:
    from curate.steps.secrets_context import _HINT, _HINT_HEAD, _HINT_OP, _HINT_WORD

    sup = re.compile(context_patterns()["@hintline"].encode(), re.DOTALL)
    extra = ["requirepass S3cret", "export TOKEN abc", "  - apikey x", "machine h login u password p",
             "x password  token v", "set db.pass v", "auth_token := 'x'", "clé_secret\u00e9 = 1", "\nkey v"]
    hits = 0
    for text in _random_texts(2000, seed=13) + _shaped_texts(1500, seed=14) + extra:
        low = _low(text)
        for h in _HINT.finditer(low):
            if _HINT_OP.match(low, h.end()) or (
                    _HINT_WORD.match(low, h.end()) and _HINT_HEAD.search(low, max(0, h.start() - 120), h.start())):
                hits += 1
                assert sup.search(_data(text)), text
                break
    assert hits > 50


@needs_hyperscan
def test_threads_scan_at_once_with_their_own_scratch() -> None:
    from concurrent.futures import ThreadPoolExecutor

    gates = SecretsDetector()._scan
    scan = GateScan(dict(zip(gates.names, gates.sources, strict=True)))
    texts = _shaped_texts(400, seed=21) + ["x " * 50000 + "password = 'v'"] * 4
    expected = [scan.present(t.lower()) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: scan.present(t.lower()), texts * 3))
    assert got == expected * 3


_SNIPPETS = ["mysql -u root -pS3cret", "mariadb-dump -p'pw x'", "sshpass -p hunter22 ssh", "redis-cli -a pw1234",
             "ldapsearch -x -w pw99", "sqlcmd -S h -P Pw1", "mongosh --password=pw", "curl -u bob:pa55 http://h",
             "wget --user=bob:x http://h", "smbclient //h -U bob%pw", "htpasswd -b f user pw", "unzip -P pw a.zip",
             "zip -P pw a.zip f", "7z x -pPw a.7z", "7za a -pPw a", "echo pw | sudo -S ls",
             "keytool -storepass changeit2", "-keypass kp", "Authorization: Bearer abcdefgh123",
             "authorization=Basic QWxhZGRpbjpvcGVu", "mysql_real_connect(c, h, u, \"pw\")", "mysqli_connect('h','u','pw')",
             "mysql_connect(h, u, 'pw')", "getConnection(url, u, \"pw\")", "x.login(u, 'pw')",
             "NetworkCredential(u, \"pw\")", "UsernamePasswordCredentials(u, \"pw\")", "PasswordAuthentication(u, p)",
             "set_password(a, 'pw')", "simple_bind_s('cn', 'pw')", "bind_s(dn, 'pw')", "ldap_bind(c, dn, 'pw')",
             "pymysql.connect(h, u, 'pw')", "mysql.connector.connect(h, u, 'pw')", "cx_Oracle.connect(u, 'pw')",
             "pg8000.connect(u, h, 'pw')", "oracledb.connect(u, 'p', d)", "BasicAuth(\"u\", \"pw\")",
             "name: DB_PASSWORD\n  value: hunter22", "\"Name\": \"api_token\", \"Value\": \"x9fK2mQ7\"",
             "- name: SECRET_KEY\n  value: 'k8s'", "NAME=token\nVALUE=abc", "pyMySQL.connect(", "unzip", "echo", "NAME",
             "docker login -u bob -p pw123 reg", "helm registry login h --password pw", "az login -p Pw1",
             "openssl rsa -passin pass:pw1", "X-Api-Key: abcdefgh123", "new PDO($dsn, $u, 'pw')",
             "new mysqli('h', 'u', 'pw')", "HTTPBasicAuth('u', 'pw')", "auth=('u', 'pw')"]


def _command_texts(n: int, seed: int) -> list[str]:
    def pick(rng: random.Random) -> str:
        s = rng.choice(_SNIPPETS)
        return _mutate(s, rng) if rng.random() < 0.2 else s

    return _pieced_texts(n, seed, parts=8, p_pool=0.5, pick=pick, chars=(0, 12),
                         sep=lambda rng: rng.choice(["", " ", "\n", "x", "_"]))


def test_anchored_scans_find_what_finditer_finds() -> None:
    """The command-line, call and name/value patterns are only tried where a match can start (next
    to a head in the lower-cased text): the matches are finditer's, in order."""
    from curate.steps import secrets_context as sc

    checks = [(sc._CLI[i], sc._CLI_GATES[i][0], st) for i, st in sc._CLI_STARTS.items()]
    checks += [(sc._CLI[i], heads, st) for i, (heads, st) in sc._CLI_ANCHORS.items()]
    checks += [(rx, (lit,), sc._CALL_STARTS[lit]) for rx, _, lit in sc._CALLS if lit in sc._CALL_STARTS]
    checks += [(rx, *sc._CALL_ANCHORS[lit]) for rx, _, lit in sc._CALLS if lit in sc._CALL_ANCHORS]
    checks += [(sc._NAME_VALUE, ("name",), (0, 1))]
    hits: Counter[str] = Counter()
    for text in _command_texts(3000, seed=11) + _random_texts(500, seed=12):
        low = _low(text)
        for rx, heads, starts in checks:
            want = [m.span() for m in rx.finditer(text)]
            assert [m.span() for m in sc.anchored(rx, text, low, heads, starts)] == want, (rx.pattern, text)
            hits[rx.pattern] += len(want)
    # every anchored pattern matched somewhere, so no comparison is vacuous
    assert all(hits[rx.pattern] > 0 for rx, _, _ in checks), [rx.pattern for rx, _, _ in checks if not hits[rx.pattern]]


def test_literal_spans_are_finditer_spans() -> None:
    """The hint scans of the secrets passes find their words with ``str.find``: the spans are
    ``finditer``'s, overlapping words ("passecret", "contrasecret", "secretoken") included."""
    from curate.steps.gate_scan import literal_spans, literal_words
    from curate.steps.secrets_context import _HINT

    extra = ["passecret", "contrasecret", "secretoken", "kkeyy passpass", "tokenkey", "", "ke", "pwdpass\u0130key"]
    for rx in (_HINT, _KEYWORD_HINT):
        words = literal_words(rx)
        hits = 0
        for text in _random_texts(1000, seed=21) + _command_texts(500, seed=22) + extra:
            low = _low(text) if "\u0130" not in text else text.lower()
            want = [m.span() for m in rx.finditer(low)]
            assert literal_spans(low, words) == want, (rx.pattern, text)
            hits += len(want)
        assert hits > 50
    with pytest.raises(ValueError):
        literal_words(re.compile("pass|password"))
    with pytest.raises(ValueError):
        literal_words(re.compile("a.b|c"))
