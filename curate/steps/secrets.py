"""Secrets in text and code (API keys, tokens, private keys, passwords) with Yelp's detect-secrets.

``SecretsDetector.detect(text)`` returns ``(start, end, type)`` spans of secrets; the PII step
(``curate.steps.pii.PIIRedactor``, ``pii.secrets: true``) redacts them with typed placeholders
(``<SECRET_AWS_KEY>``, ``<SECRET_PRIVATE_KEY>``, ...) and counts them per type like the other PII
types. The detection is detect-secrets' own plugins (``analyze_string``, no verification, so no
network): the token formats of AWS, GitHub, GitLab, Slack, Stripe, OpenAI, PyPI, npm, SendGrid,
Twilio, Discord, Telegram, Mailchimp, Azure storage, IBM, Artifactory, Square, SoftLayer, Cloudant,
JWTs, private-key blocks, passwords in URLs (``scheme://user:password@host``) and secret-sounding
assignments (``password = "..."``, its ``KeywordDetector``, with detect-secrets' own heuristic
filters against placeholders, templates, UUIDs and indirect references).

detect-secrets reports values, not offsets: every occurrence of a value in the text is redacted.
Two plugins report less than the secret: the private-key plugin reports the ``BEGIN ... PRIVATE
KEY`` header, so the span runs from the ``-----BEGIN`` line to its ``-----END ...-----`` line; the
JWT plugin's pattern ends lazily before the signature, so a JWT span runs to the end of the token.
Left out on purpose: the high-entropy-string plugins (every hash, UUID and base64 blob in code is
"high entropy") and the public-IP plugin (IP addresses are a PII type of their own).
"""

from __future__ import annotations

import re
from typing import Any

from curate.steps.gate_scan import folded, literal_spans, literal_words

# detect-secrets plugin class -> our type (placeholder ``<TYPE>``)
PLUGINS = {
    "aws.AWSKeyDetector": "SECRET_AWS_KEY",
    "artifactory.ArtifactoryDetector": "SECRET_ARTIFACTORY",
    "azure_storage_key.AzureStorageKeyDetector": "SECRET_AZURE_KEY",
    "basic_auth.BasicAuthDetector": "SECRET_URL_PASSWORD",
    "cloudant.CloudantDetector": "SECRET_CLOUDANT",
    "discord.DiscordBotTokenDetector": "SECRET_DISCORD_TOKEN",
    "github_token.GitHubTokenDetector": "SECRET_GITHUB_TOKEN",
    "gitlab_token.GitLabTokenDetector": "SECRET_GITLAB_TOKEN",
    "ibm_cloud_iam.IbmCloudIamDetector": "SECRET_IBM_KEY",
    "ibm_cos_hmac.IbmCosHmacDetector": "SECRET_IBM_KEY",
    "jwt.JwtTokenDetector": "SECRET_JWT",
    "mailchimp.MailchimpDetector": "SECRET_MAILCHIMP_KEY",
    "npm.NpmDetector": "SECRET_NPM_TOKEN",
    "openai.OpenAIDetector": "SECRET_OPENAI_KEY",
    "private_key.PrivateKeyDetector": "SECRET_PRIVATE_KEY",
    "pypi_token.PypiTokenDetector": "SECRET_PYPI_TOKEN",
    "sendgrid.SendGridDetector": "SECRET_SENDGRID_KEY",
    "slack.SlackDetector": "SECRET_SLACK_TOKEN",
    "softlayer.SoftlayerDetector": "SECRET_SOFTLAYER",
    "square_oauth.SquareOAuthDetector": "SECRET_SQUARE",
    "stripe.StripeDetector": "SECRET_STRIPE_KEY",
    "telegram_token.TelegramBotTokenDetector": "SECRET_TELEGRAM_TOKEN",
    "twilio.TwilioKeyDetector": "SECRET_TWILIO_KEY",
    "keyword.KeywordDetector": "SECRET_PASSWORD",
}
SECRET_TYPES = tuple(sorted(set(PLUGINS.values())))

# Cheap necessary conditions of the plugins (a plugin's patterns cannot match a text where none
# of its gates holds), so their regexes, which try every position of a text, run on few texts:
# ``("long", rx)``: the secret is a run of >= 20 characters, so it lies inside a whitespace-free
# token that long and ``rx`` is searched in those tokens only; ``("lower", words)``: a literal of
# the pattern, searched in the lower-cased text; ``("rx", rx)``: a pattern with a literal head;
# ``("all", conditions)``: every one of the conditions holds (each necessary on its own).
GATES: dict[str, tuple[tuple[str, Any], ...]] = {  # alternatives: the plugin runs when one holds
    # the token after its head is >= 10 (AKC) or >= 8 (AP?) alphanumerics long
    "artifactory.ArtifactoryDetector": (("rx", re.compile(r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}")),),
    "aws.AWSKeyDetector": (("long", re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")),
                           # its secret-key pattern (detect-secrets 1.5's own, as it stands)
                           ("rx", re.compile(r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"]"
                                             r"[0-9a-zA-Z/+]{40}['\"]", re.IGNORECASE))),
    "azure_storage_key.AzureStorageKeyDetector": (("lower", ("accountkey=",)),),
    # its pattern as detect-secrets 1.5 has it, ungrouped
    "basic_auth.BasicAuthDetector": (("rx", re.compile(r"://[^:/?#\[\]@!$&'()*+,;=\s]+:[^:/?#\[\]@!$&'()*+,;=\s]+@")),),
    # its assignment patterns (case-sensitive) hold ``cl[oudant|ou][-_][api]`` + a key word; its URL
    # patterns (any case) ``cloudant.com``
    "cloudant.CloudantDetector": (("all", (("rx", re.compile(r"cl(?:oudant|ou)?[-_]?(?:api)?(?:key|pw|pass|token)"
                                                             r"|(?i:cloudant\.com)")),
                                           ("long", re.compile(r"[0-9a-f]{64}|[a-z]{24}", re.IGNORECASE)))),),
    # its one pattern (detect-secrets 1.5's own)
    "discord.DiscordBotTokenDetector": (("long", re.compile(r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}")),),
    "github_token.GitHubTokenDetector": (("lower", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),),
    "gitlab_token.GitLabTokenDetector": (("lower", ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941",
                                                    "glcbt-", "glimt-", "glptt-")),),
    # its one pattern: a key word (case-sensitive), then on the same line (only spaces, quotes and
    # an assignment in between) the 44-character key
    "ibm_cloud_iam.IbmCloudIamDetector": (("all", (("rx", re.compile(r"(?:key|pwd|pass|token)[^\n]*?"
                                                                     r"[a-zA-Z0-9_\-]{44}")),
                                                   ("long", re.compile(r"[a-zA-Z0-9_\-]{44}")))),),
    "ibm_cos_hmac.IbmCosHmacDetector": (("long", re.compile(r"[a-f0-9]{48}", re.IGNORECASE)),),
    "jwt.JwtTokenDetector": (("lower", ("eyj",)),),
    # its one pattern's head and suffix (case-sensitive ASCII: the lower-cased text holds it as it stands)
    "mailchimp.MailchimpDetector": (("rx", re.compile(r"[0-9a-z]{32}-us[0-9]")),),
    "npm.NpmDetector": (("lower", ("_authtoken",)),),
    "openai.OpenAIDetector": (("lower", ("t3blbkfj",)),),
    "private_key.PrivateKeyDetector": (("lower", ("private key", "putty-user-key")),),
    "pypi_token.PypiTokenDetector": (("lower", ("pypi-",)),),
    "sendgrid.SendGridDetector": (("lower", ("sg.",)),),
    "softlayer.SoftlayerDetector": (("lower", ("softlayer",)),),
    "square_oauth.SquareOAuthDetector": (("lower", ("sq0csp-",)),),
    "stripe.StripeDetector": (("lower", ("k_live_",)),),
    "telegram_token.TelegramBotTokenDetector": (("long", re.compile(r"\d{8}:")),),
    "twilio.TwilioKeyDetector": (("long", re.compile(r"(?:AC|SK)[a-z0-9]{32}")),),
    "slack.SlackDetector": (("lower", ("xox", "hooks.slack")),),
}
_LONG = 20  # the shortest "long" secret (an AWS key id)
# the keyword plugin's default patterns need, after the keyword, a colon then a quote, or an
# ``=``/``!`` comparison or assignment with a quote, or a quote followed by ``;``
_KEYWORD_LINE = re.compile(r"[:=!;]")
_QUOTE_SEMI = re.compile("[\'\"`];")

_PEM_END = re.compile(r"-----END [A-Z0-9 ]*-----|PuTTY-Private-MAC: *[0-9a-fA-F]+")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_WORD_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


# values that are the whole secret as reported (no token to extend)
_WHOLE_VALUE = frozenset({"SECRET_PASSWORD", "SECRET_URL_PASSWORD", "SECRET_PRIVATE_KEY", "SECRET_JWT",
                          "SECRET_SLACK_TOKEN", "SECRET_AZURE_KEY"})
# lines the keyword plugin can fire on hold one of its words (detect-secrets' DENYLIST) and, for
# its default (quotes-required) patterns, a quote; other lines never reach its dozen regexes
_KEYWORD_HINT = re.compile(r"key|pass|pwd|secret|contrase")  # searched in the lower-cased text
_KEYWORD_WORDS = literal_words(_KEYWORD_HINT)  # its matches are found with str.find (gate_scan.literal_spans)
_QUOTE = re.compile("[\'\"`]")
# shapes for the gate scan (``curate.steps.gate_scan``, bytes of the lower-cased text): a run of
# _LONG bytes without ASCII whitespace (every token of _LONG characters is one: str.split() splits
# on more), and a keyword-plugin hint with a quote on its line (the plugin needs both)
_SCAN_SHAPES = {
    "@long": rf"[^\x09-\x0d\x20]{{{_LONG}}}",
    "@keyword_line": rf"(?:{_KEYWORD_HINT.pattern})[^\n]*[\'\"`]|[\'\"`][^\n]*(?:{_KEYWORD_HINT.pattern})",
}
_MAX_LINE = 4000  # the keyword plugin's regexes backtrack on very long lines: read a window there
# "long" gate patterns that cannot match whitespace (no ".", "\s", negated class or space in them)
# and match at least _LONG characters: a match in the text lies in one long token and one in the
# joined long tokens cannot cross the joining space, so searching the text answers the same
_TEXT_EQUIVALENT = frozenset({
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", r"[0-9a-f]{64}|[a-z]{24}",
    r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}",
    r"[a-zA-Z0-9_\-]{44}", r"[a-f0-9]{48}", r"(?:AC|SK)[a-z0-9]{32}"})
# For most "rx" and "long" gate patterns of GATES: a bytes pattern that matches the lower-cased
# text's UTF-8 wherever the gate pattern matches the text (or its long tokens), so the scan can rule
# a gate out before its regex runs. Upper-case letters become lower-case; Unicode classes (``\d``,
# IGNORECASE's ``ſ`` for ``s``) take any non-ASCII byte; counted repeats of such classes count
# bytes, at least one per character (up to four). Checked on random text: tests/curate/test_gate_scan.py.
# Left out: the long-token parts of the cloudant and IBM gates, which the scan would pay for on
# every text (their "all" gates list the part it finds first).
_N = r"[\x80-\xff]"
_LOW_SUPERSETS: dict[str, str] = {
    r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}": rf"akc[a-z0-9]{{10}}|ap(?:[0-9a-f]|{_N}{{2,4}})[a-z0-9]{{8}}",
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}": r"(?:a3t[a-z0-9]|abia|acca|akia|asia)[0-9a-z]{16}",
    r"cl(?:oudant|ou)?[-_]?(?:api)?(?:key|pw|pass|token)|(?i:cloudant\.com)":
        r"cl(?:oudant|ou)?[-_]?(?:api)?(?:key|pw|pass|token)|cloudant\.com",
    r"(?:key|pwd|pass|token)[^\n]*?[a-zA-Z0-9_\-]{44}": r"(?:key|pwd|pass|token)[^\n]*[a-z0-9_\-]{44}",
    # discord: its two dots and what follows the first (its class, \d widened to any non-ASCII
    # byte: 6 characters take 6 to 24 bytes)
    r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}": r"\.[a-z0-9_\-\x80-\xff]{6,24}\.[a-z0-9_\-\x80-\xff]{27}",
    r"(?:AC|SK)[a-z0-9]{32}": r"(?:ac|sk)[a-z0-9]{32}",
    r"://[^:/?#\[\]@!$&'()*+,;=\s]+:[^:/?#\[\]@!$&'()*+,;=\s]+@":
        r"://[^:/?#\[\]@!$&'()*+,;=\x09-\x0d\x20]+:[^:/?#\[\]@!$&'()*+,;=\x09-\x0d\x20]+@",
    # IGNORECASE: "s" also matches U+017F, "i" U+0131 (gate_scan.folded); "." any but a newline
    r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"][0-9a-zA-Z/+]{40}['\"]":
        folded("aws") + r"[^\n]{0,80}(?:key|pwd|pw|" + folded("pass") + r"|token)[^\n]{0,80}['\"]"
        r"(?:[0-9a-z/+]|\xc5\xbf|\xc4\xb1){40}['\"]",
    # IGNORECASE: no character but the ASCII ones matches [a-f0-9]
    r"[a-f0-9]{48}": r"[a-f0-9]{48}",
    r"[0-9a-z]{32}-us[0-9]": r"[0-9a-z]{32}-us[0-9]",
    r"\d{8}:": r"[0-9\x80-\xff]{8}:",
}


def _whole_token(plugin: Any, text: str, value: str) -> list[str]:
    """A short value is either a short secret (a URL password) or the capture group that tags a
    token's kind at its start (GitHub's ``(ghp|gho|...)_``): then the secret is the whole match."""
    out = []
    for rx in getattr(plugin, "denylist", ()):
        for m in rx.finditer(text):
            for i, g in enumerate(m.groups(), start=1):
                if g == value:
                    out.append(m.group(0) if m.start(i) == m.start() and m.end(i) < m.end() else value)
    return out or [value]


_PEM_END_ONLY = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_B64_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}[ \t]*\r?\n")


def _pem_tails(text: str) -> list[tuple[int, int, str]]:
    """The second half of a private-key block cut in two (its ``BEGIN`` line in another document):
    the base64 lines right before an ``-----END ... PRIVATE KEY-----`` line, with it."""
    out = []
    for m in _PEM_END_ONLY.finditer(text):
        start = m.start()
        while start > 0:  # walk back over whole base64 lines
            ls = text.rfind("\n", 0, start - 1) + 1
            if not _B64_LINE.fullmatch(text, ls, start):
                break
            start = ls
        out.append((start, m.end(), "SECRET_PRIVATE_KEY"))
    return out


class SecretsDetector:
    """Spans of secrets on a text with detect-secrets' plugins (no verification, no network)."""

    def __init__(self, plugins: dict[str, str] | None = None, *, context: bool = True,
                 extra_gates: dict[str, str] | None = None) -> None:
        """``extra_gates``: more ``GateScan`` patterns scanned in the same pass (the PII step's), so
        one ``lowered(text)`` serves both."""
        import importlib

        from curate.steps.secret_formats import PROVIDER_PLUGINS
        from curate.steps.secrets_context import ContextSecrets

        self._plugins: list[tuple[Any, str, tuple[tuple[str, Any], ...] | None]] = []
        self._keyword: Any = None
        for path, kind in (plugins or PLUGINS).items():
            mod, cls = path.rsplit(".", 1)
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{mod}"), cls)()
            if cls == "KeywordDetector":
                self._keyword = (plugin, kind)
            else:
                self._plugins.append((plugin, kind, GATES.get(path)))
        self._context: ContextSecrets | None = None
        if context:  # provider formats detect-secrets lacks, and secrets named by their context
            for plugin_cls, gates in PROVIDER_PLUGINS.values():
                # every provider token is >= 20 characters without whitespace: its literal lies in
                # one of the text's long tokens (few in prose)
                self._plugins.append((plugin_cls(), plugin_cls.secret_type, (("long_lower", gates),)))
            self._context = ContextSecrets()
        # every gate literal, the long-token shape and the keyword plugin's line shape, and the
        # context layer's gates, found in one compiled pass over the lower-cased text
        from curate.steps.gate_scan import GateScan, literal
        from curate.steps.secrets_context import context_patterns

        lits = {w for _, _, gate in self._plugins if gate for how, what in gate
                if how in ("lower", "long_lower") for w in what} | {"private key-----", *_KEYWORD_WORDS}
        # the "rx" and "long" gate patterns the scan can rule out first: pattern -> scan name
        self._pre = {rx: f"@gate{i}" for i, rx in enumerate(sorted(_LOW_SUPERSETS))}
        self._scan = GateScan({**{w: literal(w) for w in sorted(lits)}, **_SCAN_SHAPES,
                               **{name: _LOW_SUPERSETS[rx] for rx, name in self._pre.items()},
                               **(context_patterns() if context else {}), **(extra_gates or {})},
                              open_on_re={"@keyword_line", *(n for rx, n in self._pre.items()
                                                          if "[^\\n]*" in _LOW_SUPERSETS[rx])})
        # which plugins a text can need, from the names the scan finds: a plugin whose gate can only
        # hold where one of its names occurs is listed under them, one with no such name always runs
        self._always: list[int] = []
        self._by_name: dict[str, list[int]] = {}
        for i, (_, _, gate) in enumerate(self._plugins):
            names = self._gate_names(gate)
            if names is None:
                self._always.append(i)
            for name in names or ():
                self._by_name.setdefault(name, []).append(i)
        # a text holding none of these names holds no secret any pass can find (most prose)
        from curate.steps.secrets_context import active_names

        self._active = None if self._always else frozenset(
            {*self._by_name, "@keyword_line", "private key-----", *(active_names() if context else ())})

    def _gate_names(self, gate: Any) -> set[str] | None:
        """Scan names one of which occurs wherever ``gate`` holds (``None``: no such set)."""
        if gate is None:
            return None
        out: set[str] = set()
        for how, what in gate:
            if how in ("lower", "long_lower"):  # the literals (long_lower's lie in the text too)
                out |= set(what)
            elif how in ("rx", "long"):
                name = self._pre.get(what.pattern) or ("@long" if how == "long" else None)
                if name is None:
                    return None
                out.add(name)
            else:  # "all": the names of the first of its conditions that has some
                names = next((n for h, w in what if (n := self._gate_names(((h, w),))) is not None), None)
                if names is None:
                    return None
                out |= names
        return out

    def _keyword_values(self, text: str, low: str, present: frozenset[str] | None = None) -> list[str]:
        """``present``: the gates of ``self.lowered(text)`` (its words of _KEYWORD_HINT are those
        searched for); ``None``: every word."""
        from detect_secrets.filters import heuristic as h

        from curate.steps.secrets_context import is_placeholder

        plugin, _ = self._keyword
        out = []
        last_line = -1
        words = _KEYWORD_WORDS if present is None else tuple(w for w in _KEYWORD_WORDS if w in present)
        for hint_start, hint_end in literal_spans(low, words):  # _KEYWORD_HINT.finditer(low)
            ls = text.rfind("\n", 0, hint_start) + 1
            if ls == last_line:
                continue  # one look per line
            last_line = ls
            le = text.find("\n", hint_end)
            line = text[ls:le if le >= 0 else len(text)]
            if not _QUOTE.search(line) or not _KEYWORD_LINE.search(line):
                continue
            if "=" not in line and "!" not in line and not _QUOTE_SEMI.search(line) \
                    and not re.search(r":\s*[\'\"`]", line):
                continue
            hint = _KEYWORD_HINT.search(line.lower())
            assert hint is not None
            if len(line) > _MAX_LINE:
                line = line[max(0, hint.start() - 200):hint.start() + 800]
            if ("(" in line or "[" in line) and h.is_indirect_reference(line):
                continue  # (its pattern needs a bracket; on long lines it is slow)
            for value in plugin.analyze_string(line):
                # detect-secrets' own false-positive filters of its default scan
                if not value or is_placeholder(value) or h.is_sequential_string(value) or h.is_potential_uuid(value) \
                        or h.is_likely_id_string(value, line, plugin) or h.is_templated_secret(value) \
                        or h.is_prefixed_with_dollar_sign(value) or h.is_not_alphanumeric_string(value):
                    continue
                out.append(value)
        return out

    def lowered(self, text: str) -> tuple[str, frozenset[str]]:
        """``text`` lower-cased at the same offsets, and the gates found in it (``detect``'s input)."""
        return self._scan.lowered(text)

    def detect(self, text: str, lowered: tuple[str, frozenset[str]] | None = None) -> list[tuple[int, int, str]]:
        """``(start, end, type)`` of every occurrence of every secret value found in ``text``;
        ``lowered``: ``self.lowered(text)`` when the caller has it."""
        found: list[tuple[int, int, str]] = []
        values: list[tuple[str, str]] = []
        low, present = lowered or self._scan.lowered(text)
        if self._active is not None and present.isdisjoint(self._active):
            return found
        # the whitespace-free tokens of >= 20 characters (a "long" secret lies in one; few in prose;
        # none where no 20 bytes run without ASCII whitespace), joined once when a gate asks
        longs: list[str] = []

        def long_text() -> str:
            if not longs:
                longs.append(" ".join(t for t in text.split() if len(t) >= _LONG) if "@long" in present else "")
            return longs[0]

        pre = self._pre

        def holds(how: str, what: Any) -> bool:
            if how == "lower":  # gate literals are found exactly by the scan
                return not present.isdisjoint(what)
            if how in ("rx", "long") and (name := pre.get(what.pattern)) is not None and name not in present:
                return False  # the scan's superset of the pattern is absent
            if how == "rx":
                return what.search(text) is not None
            if how == "long":
                if what.pattern in _TEXT_EQUIVALENT:  # the same answer on the text, without joining
                    return what.search(text) is not None
                return bool(long_text()) and what.search(long_text()) is not None
            if how == "long_lower":
                return not present.isdisjoint(what) and bool(long_text()) and any(
                    w in long_text().lower() for w in what)
            return all(holds(h, w) for h, w in what)  # "all"

        todo = set(self._always)
        for name in present:
            todo.update(self._by_name.get(name, ()))
        for i in sorted(todo):  # in the plugins' order
            plugin, kind, gate = self._plugins[i]
            if gate is not None and not any(holds(how, what) for how, what in gate):
                continue
            for v in plugin.analyze_string(text):
                if len(v) >= 8:
                    values.append((v, kind))
                elif v:
                    values += [(x, kind) for x in _whole_token(plugin, text, v)]
        if self._keyword is not None and "@keyword_line" in present:
            values += [(v, self._keyword[1]) for v in self._keyword_values(text, low, present)]
        for value, kind in dict.fromkeys(values):
            start = text.find(value)
            while start >= 0:
                s, e = start, start + len(value)
                if kind == "SECRET_PRIVATE_KEY":
                    s = text.rfind("-----", 0, s) if text.rfind("-----", 0, s) >= max(0, s - 20) else s
                    m = _PEM_END.search(text, e)
                    e = m.end() if m else len(text)  # a cut-off key: redact to the end
                elif kind == "SECRET_JWT":
                    e = _TOKEN_TAIL.match(text, e).end()  # type: ignore[union-attr]
                elif kind not in _WHOLE_VALUE:
                    # a token format matched on its head (Stripe's 24 of up to 99 characters,
                    # GitLab's routable suffix): the secret runs to the end of the token
                    e = _WORD_TAIL.match(text, e).end()  # type: ignore[union-attr]
                found.append((s, e, kind))
                start = text.find(value, e)
        if "private key-----" in present:
            found += _pem_tails(text)
        if self._context is not None:
            found += self._context.detect(text, low, present)
        return found
