"""The gates of ``curate.steps.secrets_context`` for the compiled scan (``curate.steps.gate_scan``).

Each is a bytes pattern on the lower-cased text that matches wherever the check it stands for can
hold, so a finder whose gate is absent is skipped; the finders then run their own exact checks.
"""

from __future__ import annotations

from collections.abc import Iterable

from curate.steps.gate_scan import SPACE, WORD, folded, literal

_NON_ASCII = r"[\x80-\xff]"


def context_patterns(words: Iterable[str], hint: str, call_hint: str) -> dict[str, str]:
    """The gates of ``secrets_context`` for ``GateScan`` (searched in the lower-cased text): its
    literal ``words`` under their own text, ``@hint`` and ``@call`` for the hint and call-name
    alternations (``hint``, ``call_hint``: their regex sources), and the shapes below."""
    out = {w: literal(w) for w in sorted(set(words))}
    out["@hint"] = hint
    # a superset of where the hint loop of ContextSecrets.detect can read a line: a hint followed by
    # an operator (_HINT_OP) or with a directive's head before it (_HINT_HEAD): at its line's start
    # after export/set/-, right after "password", after "set", or "login"/"machine" anywhere
    ident, hint = rf"(?:[a-z0-9_.\-]|{_NON_ASCII}){{0,160}}", f"(?:{hint})"
    out["@hintline"] = "|".join((
        rf"{hint}{ident}[\"'`\]]{{0,3}}[ \t]*(?:[:=(]|=>)",
        rf"(?:^|\n)[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]*)?{ident}{hint}",
        rf"password[ \t]*{hint}", rf"set[ \t]+{ident}{hint}", "login|machine"))
    out["@call"] = call_hint
    out["@authcall"] = rf"auth{SPACE}*={SPACE}*\("  # the call pattern \bauth\s*=\s*\(
    out["@namevalue"] = r"name[\"']?[ \t]*[:=]"  # the head of a name/value pair (_NAME_VALUE)
    # an AWS key id (_AWS_ID), a URL with a user and password (_URL_CRED), a long option naming a
    # secret (the "--password V" command-line pattern)
    out["@awsid"] = r"(?:a3t[a-z0-9]|akia|asia|abia|acca)[a-z2-7]{16}"
    out["@urlcred"] = r"://[^\x09-\x0d\x20:/?#@\"'<>]*:[^\x09-\x0d\x20/\"'<>]*@"
    out["@longflag"] = "--(?:" + "|".join((
        "password", "passwd", "pass", "db-password", "admin-password", "root-password", "http-password",
        "ftp-password", "proxy-password", "passphrase", "token", "api-key", "apikey", "api-token", "auth-token",
        "access-token", "secret", "client-secret", "secret-key", "access-key", "secret-access-key",
        "private-token", "storepass", "keypass", "srcstorepass", "deststorepass")) + ")"
    # supersets of _PARAM_CRED's name and of _KV_GATE, on the lower-cased bytes (gate_scan.folded)
    names = ("password", "passwd", "pwd", "pass", "access_?token", "auth_?token", "token", "api_?key", "apikey",
             "secret", "client_?secret", "sig", "signature", "private_?token")
    out["@param"] = "[?&;](?:" + folded("user") + "_?)?(?:" + "|".join(
        "_?".join(folded(part) for part in n.split("_?")) for n in names) + ")="
    out["@kv"] = rf"(?:pass|pwd|secret|token|key|auth|cred)(?:[.\-]|{WORD}){{0,120}}[\"']{SPACE}*,{SPACE}*[\"']"
    return out
