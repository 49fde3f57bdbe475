"""Secrets found by their context: what names them, not what they look like.

``ContextSecrets.detect(text)`` returns ``(start, end, type)`` spans of values that the text itself
says are secrets, in the shapes configs, shell history and code take: assignments whose key names a
password or a token/key/secret (a token value must also look random), command-line flags, bearer
headers, connection URLs and credential parameters, string literals in the password position of
connect/login calls, and key/value pairs across lines. Placeholders, references, paths and keys
that only name or size a secret are not secrets. The full list of shapes: docs/pii.md ("What is
detected, and how", secrets layer 3).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.filters import heuristic
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

from curate.steps import secrets_gates
from curate.steps.gate_scan import GateScan, anchored, literal_spans, literal_words
from curate.steps.secrets_starts import _CALL_ANCHORS, _CALL_STARTS, _CLI_ANCHORS, _CLI_STARTS

PASSWORD, TOKEN, URL = "SECRET_PASSWORD", "SECRET_TOKEN", "SECRET_URL_PASSWORD"

# lines worth a look hold one of these (searched in the lower-cased text)
_HINT = re.compile(r"pass|pwd|secret|token|key|auth|cred|contrase")
_HINT_WORDS = literal_words(_HINT)  # its matches are found with str.find (gate_scan.literal_spans)
# what must follow a hint's identifier (an operator or a setter call) or precede it (a directive at
# the start of its line: "requirepass V", "export K V", netrc "... password V", "aws configure set K V")
_HINT_OP = re.compile(r"[\w.\-]{0,40}[\"'`\]]{0,3}[ \t]*(?:[:=(]|=>)")
_HINT_WORD = re.compile(r"[\w.\-]{0,40}[ \t]+\S")
_HINT_HEAD = re.compile(r"(?:^[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]*)?|\bpassword[ \t]*$|\bset[ \t]+)[\w.\-]{0,40}\Z"
                        r"|\b(?:login|machine)\b", re.MULTILINE)
# a key: an identifier with one of the words, possibly dotted/dashed/bracketed, possibly quoted
_KEY = re.compile(r"(?<![\w.\-])[\"'`]?(?P<key>(?:[A-Za-z_$@][\w.\-]*?)?(?i:pass|pwd|secret|token|key|auth|cred"
                  r"|contrase)[\w.\-]*)(?P<close>[\"'`]?\]?[\"'`]?)")
_OP = re.compile(r"[ \t]*(?P<op>:=|=>|={1,3}|!={1,2}|:|\(|[ \t](?=[^\s=:]))[ \t]*")
# a secret value is at most a few hundred characters (the longest token formats are ~200)
_QUOTED = re.compile(r"(?:[bruf]|rb|br)?(?P<q>\"\"\"|'''|[\"'`])(?P<v>.{0,400}?)(?<!\\)(?P=q)", re.IGNORECASE)
_UNQUOTED = re.compile(r"[^\s\"'`]{1,400}")
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_ENTROPY = Base64HighEntropyString()

PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pw", "pass", "passw", "pword", "passcode",
                            "contraseña", "contrasena", "passwort", "requirepass", "masterauth", "masterpass"})
TOKEN_WORDS = frozenset({"token", "secret", "secrets", "apikey", "credential", "credentials", "bearer", "auth",
                         "authkey", "authtoken", "accesskey", "secretkey", "privatekey", "apisecret"})
# "key" names a secret only next to one of these
KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "priv", "client", "auth", "service", "account",
                            "app", "master", "encryption", "signing", "session", "consumer", "subscription",
                            "webhook", "deploy", "admin", "shared", "hmac", "license", "db", "database", "x"})
# a key with one of these parts names, sizes or locates a secret, it does not hold one
NOT_A_VALUE = frozenset({
    "file", "files", "path", "dir", "directory", "url", "uri", "endpoint", "length", "len", "size", "ttl",
    "timeout", "expiry", "expires", "expire", "expiration", "lifetime", "policy", "min", "max", "minimum",
    "maximum", "field", "fields", "type", "name", "names", "id", "ids", "header", "prefix", "env", "var", "format",
    "mode", "method", "algorithm", "alg", "count", "age", "reset", "strength", "regex", "pattern", "hint",
    "label", "placeholder", "prompt", "enabled", "enable", "disable", "disabled", "required", "manager",
    "provider", "location", "ref", "reference", "arn", "version", "rotation", "cache", "backend", "source",
    "pub", "public", "cert", "template", "validator", "validators", "hasher", "hashers", "hash", "changed",
    "last", "forgot", "confirm", "confirmation", "input", "form", "view", "class", "store", "stores",
    "keys", "tokens", "tokenizer", "tokenize", "board", "word", "words", "down", "up", "press", "pressed",
    "event", "code", "codes", "index", "column", "col", "generator", "pair", "chain", "ring",
    "usage", "scope", "scopes", "kind", "vault", "mount", "bits", "sign", "verify", "error",
    "msg", "message", "text", "title", "help", "description", "desc", "doc", "docs", "sort", "cmp", "func",
    "fn", "lambda", "map", "attr", "attribute", "primary", "foreign", "unique", "partition", "range",
})
_BYPASS = frozenset({"bypass", "compass", "overpass", "underpass", "surpass", "trespass", "encompass", "impass",
                     "keyword", "keywords", "keyboard", "keypad", "keystroke", "monkey", "donkey", "turkey", "hockey",
                     "jockey", "whiskey", "author", "authors", "authored", "passage", "passenger", "passes",
                     "passed", "passing", "passive", "passport", "passthrough", "secretary", "keynote", "keyframe",
                     "keyframes", "hotkey", "hotkeys", "keymap", "keyed", "keyring", "keychain", "keystore"})
STOP_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "yes", "no", "on", "off", "empty", "undefined", "required", "optional",
    "sufficient", "requisite", "include", "substack", "files", "systemd", "compat", "string", "str", "int", "integer",
    "bool", "boolean", "text", "hidden", "password", "passwd", "pass", "pwd", "secret", "secrets", "token", "key",
    "value", "example", "sample", "placeholder", "redacted", "masked", "dummy", "default", "auto", "prompt", "ask",
    "stdin", "file", "env", "environ", "md5", "sha256", "scram-sha-256", "trust", "peer", "ident", "plain",
    "plaintext", "basic", "bearer", "digest", "oauth", "oauth2", "jwt", "hmac", "object", "any", "char", "bytes",
    "self", "this", "lambda", "function", "return", "new", "void", "var", "let", "const", "def", "unknown",
    "nothing", "missing", "invalid", "valid", "secure", "insecure", "changeme_not", "test", "testing", "dev",
})
_PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|\.+|-+|_+|#+|•+|…+|0+|\?+)$"
    r"|(?:^|[_\-. ])(?:your|my|enter|insert|replace|put|fill|set|add|example)[_\-. ]?(?:\w+[_\-. ])*?"
    r"(?:here|password|passwd|pass|token|key|secret|value|it|me|in)(?:$|[_\-. ])"
    r"|^(?:\{\{.*\}\}|\$\{.*\}|\$\(.*\)|%\(.*\)[sdr]?|%[A-Za-z_]\w*%|@[A-Za-z_]\w*@|#\{.*\}|<[^<>]*>|\[[^\[\]]*\]"
    r"|\{[\w.\- ]*\}|%[sd]|\$[A-Za-z_]\w*|\$\d+|\?|__\w+__|(?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+))$",
    re.IGNORECASE)
_DOTTED_REF = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:[(\[].*)?$|^[A-Za-z_][\w.]*[(\[].*[)\]]$")
_CODE_LINE = re.compile(r"^\s*(?:self\.|this\.|var |let |const |val |my \$|\$this->|def |return |if |elif |while )")


def _parts(key: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(key.replace("ñ", "n"))]


def key_kind(key: str) -> str | None:
    """``PASSWORD``, ``TOKEN`` or ``None``: what a value assigned to ``key`` is, by the key's parts."""
    parts = _parts(key)
    if not parts or any(p in NOT_A_VALUE or p in _BYPASS for p in parts):
        return None
    for p in parts:
        if p in PASSWORD_WORDS or (p.endswith(("password", "passwd")) and p not in _BYPASS):
            return PASSWORD
    for i, p in enumerate(parts):
        if p in TOKEN_WORDS or p.endswith(("token", "secret", "apikey")):
            return TOKEN
        if p == "key" and (len(parts) == 1 or any(q in KEY_QUALIFIERS for q in parts[:i] + parts[i + 1:])):
            return TOKEN
        if p.endswith("pass") and p not in _BYPASS and len(p) <= 12:  # DBPASS, PGPASS, smtppass
            return PASSWORD
    return None


def looks_random(value: str, *, strict: bool = False) -> bool:
    """A token-like value: long enough, mixed letters and digits or high entropy (detect-secrets'
    Shannon entropy over the base64 charset)."""
    if len(value) < (16 if strict else 8):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    ent = _ENTROPY.calculate_shannon_entropy(value)
    if strict:
        return ent >= 3.5 and has_digit and has_alpha
    if "-" in value and all(w.isalpha() for w in value.split("-")):  # "my-app-secret": a name
        return False
    return (has_digit and has_alpha and ent >= 2.8) or ent >= 3.8


def is_placeholder(value: str, key: str = "") -> bool:
    """A reference, template or stand-in, not a secret value."""
    v = value.strip()
    low = v.lower()
    if len(v) < 4 or low in STOP_VALUES or _PLACEHOLDER.search(v):
        return True
    if heuristic.is_templated_secret(v) or heuristic.is_sequential_string(v) or heuristic.is_potential_uuid(v):
        return True
    if v.endswith((".pem", ".key", ".txt", ".json", ".crt", ".p12", ".jks")) or (
            v.startswith(("/", "~/", "./", "../", "file:", "C:\\")) and not looks_random(v, strict=True)):
        return True  # a path (a random value may start with "/": AWS secret keys do)
    if key and low in {p for p in _parts(key)} | {key.lower()}:
        return True
    return "{{" in v or "${" in v or "{%" in v or "<%" in v


def _value_at(line: str, pos: int) -> tuple[int, int, bool] | None:
    """``(start, end, quoted)`` of the value starting at ``pos`` of ``line``."""
    m = _QUOTED.match(line, pos)
    if m:
        return m.start("v"), m.end("v"), True
    m = _UNQUOTED.match(line, pos)
    if not m:
        return None
    s, e = m.span()
    v = line[s:e]
    for sep in (";", "&"):  # connection strings / query strings: the next "name=" ends the value
        cut = re.search(rf"{sep}[\w ]+=", v)
        if cut:
            e = s + cut.start()
            v = line[s:e]
    while e > s and line[e - 1] in ",;" or (e > s and line[e - 1] == ")" and "(" not in line[s:e - 1]):
        e -= 1
    return s, e, False


def _code_reference(line: str, key_start: int, value: str) -> bool:
    """An unquoted value on a code line that is an identifier: a variable, not a literal."""
    if not re.fullmatch(r"[A-Za-z_]\w*", value):
        return False
    before = line[:key_start]
    if before.count('"') % 2 or before.count("'") % 2:
        return False  # inside a string literal ("host=h password=V"): a literal, not a variable
    if _CODE_LINE.match(line) or before.rstrip().endswith(("(", ",")):
        return True
    return value.islower() and "_" in value or value.isidentifier() and value[0].islower() and \
        line.rstrip().endswith((",", ")", ";"))


def assignments(line: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, type)`` of values assigned to secret-naming keys on one line."""
    for km in _KEY.finditer(line):
        key = km.group("key")
        kind = key_kind(key)
        if kind is None:
            continue
        om = _OP.match(line, km.end())
        if om is None:
            continue
        op = om.group("op")
        value_at = om.end()
        if op == "(" and line[km.end()] != "(":  # "masterauth (x9..." is a directive whose value starts with "("
            op, value_at = " ", om.start("op")
        if op.strip() == "" or op == "(":
            # directive ("requirepass V", netrc "password V") or setter call ("setPassword('V')")
            if op == "(":
                if not key.lower().startswith(("set", "with")) and "assign" not in key.lower() and \
                        key_kind(key) is not PASSWORD:
                    continue
            else:
                if km.start() > 160:  # a directive starts its line (netrc: "machine H login U password V")
                    continue
                head = line[:km.start()].strip().lower()
                if head not in ("", "export", "set", "-", "config set") and not re.search(
                        r"\b(?:machine|login|default)\b", head) and not re.search(r"\bconfigure set$|\bset$", head):
                    continue
        got = _value_at(line, value_at)
        if got is None:
            continue
        s, e, quoted = got
        value = line[s:e]
        if op.strip() == "" and not quoted and e < len(line.rstrip()) and line[e:].strip()[:1] not in ("#", ";", ""):
            if not re.search(r"\b(?:machine|login)\b", line):
                continue  # a directive holds one value: "password reset link sent" is prose
        if is_placeholder(value, key) or (not quoted and (_DOTTED_REF.match(value)
                                                            or _code_reference(line, km.start(), value))):
            continue
        if not quoted and ("(" in value or "[" in value) and heuristic.is_indirect_reference(line[km.start():e]):
            continue
        if value.isdigit() and (kind is TOKEN or len(value) < 6):
            continue
        if kind is TOKEN and not looks_random(value, strict=_parts(key) == ["key"]):
            continue
        if kind is PASSWORD and not any(c.isalnum() for c in value):
            continue
        yield s, e, kind


# ---------------------------------------------------------------------------------------------
# command lines

_V = r"(?P<q>[\"']?)(?P<v>(?<=[\"'])[^\"'\n]+|(?<![\"'])[^\s\"'|;&]+)(?P=q)"  # a value, quoted or one word
# case-sensitive (program names and flags are written in lower case; -p is not -P), so the regex
# engine can search for their literal heads
_CLI = tuple(re.compile(p) for p in (
    # short flags whose meaning depends on the program (case matters: -p is not -P)
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb|mariadb-dump)\b[^\n|;]{0,300}?"
    r"[ \t]-p" + _V,
    r"\b(?:docker|podman|buildah|skopeo|nerdctl|oras|helm(?:[ \t]+registry)?|az|cf)[ \t]+login\b[^\n|;]{0,300}?"
    r"[ \t](?:-p|--password)(?:=|[ \t]+)" + _V,
    r"\bsshpass[ \t]+-p[ \t]*" + _V,
    r"\bredis-cli\b[^\n|;]{0,300}?[ \t](?:-a|--pass)[ \t]+" + _V,
    r"\bldap(?:search|modify|add|delete|passwd|whoami|compare|modrdn)\b[^\n|;]{0,300}?[ \t]-w[ \t]+" + _V,
    r"\b(?:sqlcmd|bcp|osql|isql)\b[^\n|;]{0,300}?[ \t]-P[ \t]*" + _V,
    r"\bmongo(?:sh|dump|restore|export|import)?\b[^\n|;]{0,300}?[ \t](?:-p|--password)(?:=|[ \t]+)" + _V,
    r"\b(?:curl|wget)\b[^\n|;]{0,300}?[ \t](?:-u|--user)(?:=|[ \t]+)[\"']?[^:\s\"']+:(?P<q>)(?P<v>[^\s\"']+)",
    r"\bsmbclient\b[^\n|;]{0,300}?[ \t](?:-U|--user)(?:=|[ \t]+)[\"']?[^%\s\"']+%(?P<q>)(?P<v>[^\s\"']+)",
    r"\bhtpasswd[ \t]+(?:-\w*b\w*[ \t]+)(?:-\w+[ \t]+)*\S+[ \t]+\S+[ \t]+" + _V,
    r"[ \t]-pass(?:in|out)?[ \t]+[\"']?pass:(?P<q>)(?P<v>[^\s\"']+)",
    r"\b(?:zip|unzip)\b[^\n|;]{0,300}?[ \t]-P[ \t]+" + _V,
    r"\b7za?\b[^\n|;]{0,300}?[ \t]-p" + _V,
    r"\becho[ \t]+" + _V + r"[ \t]*\|[ \t]*(?:sudo[ \t]+-S|\S+(?:[ \t]+\S+)*?[ \t]+--password-stdin|passwd[ \t]+--stdin)",
    # long flags, any program
    r"--(?:password|passwd|pass|db-password|admin-password|root-password|http-password|ftp-password"
    r"|proxy-password|passphrase|token|api-key|apikey|api-token|auth-token|access-token|secret|client-secret"
    r"|secret-key|access-key|secret-access-key|private-token|storepass|keypass|srcstorepass|deststorepass)"
    r"(?:=|[ \t]+)" + _V,
    r"(?<![\w-])-(?:storepass|keypass|srcstorepass|deststorepass|storepassword)[ \t]+" + _V,
    # HTTP credentials headers
    r"\b[Aa]uthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:[Bb]earer|[Bb]asic|[Tt]oken|[Bb]ot|[Aa]pi[Kk]ey|[Kk]ey)[ \t]+"
    r"(?P<q>)(?P<v>[\w~+/=.\-]{8,})",
    r"\b[Xx]-(?:[A-Za-z]+-)?(?:[Aa]pi-?)?(?:[Kk]ey|KEY|[Tt]oken|TOKEN|[Aa]uth|[Ss]ecret)[\"']?[ \t]*:[ \t]*[\"']?(?P<q>)"
    r"(?P<v>[\w~+/=.\-]{8,})",
))
# necessary conditions of each _CLI pattern, on the lower-cased text: every group has a literal
_CLI_GATES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("mysql", "mariadb"), (" -p",)), (("login",), ("-p",)), (("sshpass",),), (("redis-cli",),), (("ldap",),),
    (("sqlcmd", "bcp", "osql", "isql"),), (("mongo",),), (("curl", "wget"),), (("smbclient",),), (("htpasswd",),),
    (("pass:",),), (("zip",), (" -p",)), (("7z",),), (("echo",), ("stdin", "sudo")),
    (("@longflag",), ("pass", "token", "key", "secret")), (("-storepass", "-keypass", "-srcstorepass", "-deststorepass"),),
    (("authorization",),), (("x-api", "x-auth", "x-token", "x-key", "x-secret", "-key:", "-token:", "-key\":",
                              "-token\":"),),
)
_CLI_HEADS = frozenset(w for gate in _CLI_GATES for w in gate[0])  # every pattern's first literals
_CLI_ANY = (" -", "\t-", "authorization", "x-")
_CLI_BY_HEAD = {w: tuple(i for i, gate in enumerate(_CLI_GATES) if w in gate[0]) for w in _CLI_HEADS}



def command_lines(text: str, low: str, present: frozenset[str] | None = None) -> Iterator[tuple[int, int, str]]:
    """``present``: the gates found in ``low`` (``_lowered(text)``)."""
    present = _lowered(text)[1] if present is None else present
    # every option pattern needs " -" (or a tab before the dash), the headers their name
    if present.isdisjoint(_CLI_ANY):
        return
    # the patterns one of whose heads occurs, in order; each runs when every group of its gate holds
    todo = sorted({i for w in present & _CLI_HEADS for i in _CLI_BY_HEAD[w]})
    for i in todo:
        rx, gate = _CLI[i], _CLI_GATES[i]
        if any(present.isdisjoint(group) for group in gate[1:]):
            continue
        for m in anchored(rx, text, low, *_CLI_ANCHORS.get(i, (gate[0], _CLI_STARTS.get(i)))):
            if i == 14 and m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
                continue  # "--password" inside a longer word
            s, e = m.span("v")
            value = text[s:e]
            flag = m.group(0)[:s - m.start()].lower()
            if is_placeholder(value) or value.startswith("-") and i != 0:
                continue
            if ("token" in flag or "key" in flag or "secret" in flag or "authorization" in flag or "x-" in flag) \
                    and "pass" not in flag and not looks_random(value):
                continue
            yield s, e, PASSWORD if "pass" in flag or i < 14 else TOKEN


# ---------------------------------------------------------------------------------------------
# URLs and connection strings

_URL_CRED = re.compile(r"(?<![\w+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}://(?P<user>[^\s:/?#@\"'<>]*):"
                       r"(?P<v>[^\s/\"'<>]*?)@(?=[\w\-.%]+(?::\d+)?(?:[/?#\s\"',;)\]]|$)|\[[0-9a-fA-F:]+\])")
_PARAM_CRED = re.compile(r"[?&;](?:user_?)?(?:password|passwd|pwd|pass|access_?token|auth_?token|token|api_?key"
                         r"|apikey|secret|client_?secret|sig|signature|private_?token)=(?P<v>[^&\s#\"'<>;]+)",
                         re.IGNORECASE)


def urls(text: str, low: str, present: frozenset[str] | None = None) -> Iterator[tuple[int, int, str]]:
    present = _lowered(text)[1] if present is None else present
    if "@urlcred" in present:
        for m in _URL_CRED.finditer(text):
            value = m.group("v")
            if value and not is_placeholder(value) and value.lower() not in ("pass", "pw", "pwd"):
                yield m.start("v"), m.end("v"), URL
    if "@param" in present:
        for m in _PARAM_CRED.finditer(text):
            value = m.group("v")
            name = m.group(0)[1:].split("=", 1)[0].lower()
            if is_placeholder(value) or ("pass" not in name and "pwd" not in name and not looks_random(value)):
                continue
            yield m.start("v"), m.end("v"), URL


# ---------------------------------------------------------------------------------------------
# positional password arguments of connect/login calls: (call pattern, index of the password)

_STR = r"\s*(?:[bruf]?(?:\"[^\"\n]*\"|'[^'\n]*')|[^,()\n]*?)\s*"
# (pattern, index of the password argument, gate: a literal of it or a secrets_gates pattern name)
_CALLS = tuple((re.compile(p), i, lit) for p, i, lit in (
    (r"\bmysql_real_connect\s*\(", 3, "mysql_real_connect"), (r"\bmysqli?_connect\s*\(", 2, "_connect"),
    (r"\bnew\s+mysqli\s*\(", 2, "mysqli"), (r"\bnew\s+PDO\s*\(", 2, "pdo"),
    (r"\bgetConnection\s*\(", 2, "getconnection"), (r"\.login\s*\(", 1, ".login"),
    (r"\bHTTP(?:Basic|Digest|Proxy)Auth\s*\(", 1, "auth("), (r"\bNetworkCredential\s*\(", 1, "networkcredential"),
    (r"\bUsernamePasswordCredentials\s*\(", 1, "usernamepassword"),
    (r"\bPasswordAuthentication\s*\(", 1, "passwordauthentication"), (r"\bset_password\s*\(", 2, "set_password"),
    (r"\b(?:simple_)?bind_s\s*\(", 1, "bind_s"), (r"\bldap_bind\s*\(", 2, "ldap_bind"),
    (r"\b(?:pymysql|MySQLdb|mysql\.connector|pg8000|cx_Oracle|oracledb)\.connect\s*\(", 2, ".connect"),
    (r"\bauth\s*=\s*\(", 1, "@authcall"), (r"\bBasicAuth\s*\(", 1, "basicauth"),
))
# a key literal and a value literal as the first two arguments: define('DB_PASSWORD', 'v'),
# props.setProperty("password", "v"), Map.of("apiKey", "v"), config.set("token", "v")
_KEY_VALUE_CALL = re.compile(r"[(\[{,]\s*(?P<kq>[\"'])(?P<key>[\w.\-]{2,64})(?P=kq)\s*,\s*(?P<q>[\"'])"
                             r"(?P<v>[^\"'\n]{0,400})(?P=q)")
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "cred")
_KV_GATE = re.compile(r"(?:pass|pwd|secret|token|key|auth|cred)[\w.\-]{0,30}[\"']\s*,\s*[\"']")
_ARG = re.compile(r"\s*(?:(?P<lit>[bruf]?(?P<q>[\"'])(?P<v>[^\"'\n]*)(?P=q))|[^,()\n\"']*(?:\([^()\n]*\))?)\s*(?:,|\))")
_CALL_HINT = re.compile(r"connect|login|auth|credential|pass|pwd|secret|token|key|bind|pdo|mysqli")


def call_arguments(text: str, low: str, present: frozenset[str] | None = None) -> Iterator[tuple[int, int, str]]:
    present = _lowered(text)[1] if present is None else present
    if "(" not in present or "@call" not in present:
        return
    for m in (_KEY_VALUE_CALL.finditer(text) if "@kv" in present and _KV_GATE.search(low) else ()):
        kl = m.group("key").lower()
        if not any(w in kl for w in _KEY_WORDS):
            continue
        kind = key_kind(m.group("key"))
        value = m.group("v")
        if kind is None or is_placeholder(value, m.group("key")) or (kind is TOKEN and not looks_random(value)):
            continue
        yield m.start("v"), m.end("v"), kind
    for rx, index, lit in _CALLS:
        if lit not in present:
            continue
        for m in anchored(rx, text, low, *_CALL_ANCHORS.get(lit, ((lit,), _CALL_STARTS.get(lit)))):
            pos = m.end()
            for i in range(index + 1):
                a = _ARG.match(text, pos)
                if a is None:
                    break
                if i == index and a.group("lit") and not is_placeholder(a.group("v")):
                    yield a.start("v"), a.end("v"), PASSWORD
                if text[a.end() - 1] == ")":
                    break
                pos = a.end()


# ---------------------------------------------------------------------------------------------
# pairs across lines

_AWS_ID = re.compile(r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_VALUE_KEY = re.compile(r"value[\"']?[ \t]*[:=]")
_NAME_VALUE = re.compile(r"[\"']?(?:[Nn]ame|NAME)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<key>[\w.\-]+)[\"']?[ \t]*,?[ \t]*\r?\n?"
                         r"[ \t]*-?[ \t]*[\"']?(?:[Vv]alue|VALUE)[\"']?[ \t]*[:=][ \t]*" + _V)


def pairs(text: str, low: str, present: frozenset[str] | None = None) -> Iterator[tuple[int, int, str]]:
    present = _lowered(text)[1] if present is None else present
    if "@awsid" in present:
        for m in _AWS_ID.finditer(text):
            # from two lines before the key id to three lines after it
            lo = m.start()
            for _ in range(3):
                lo = max(0, text.rfind("\n", 0, max(lo - 1, 0)))
            hi = m.end()
            for _ in range(4):
                nxt = text.find("\n", hi + 1)
                hi = len(text) if nxt < 0 else nxt
            for s in _AWS_SECRET.finditer(text, lo, hi):
                v = s.group(0)
                if any(c.isupper() for c in v) and any(c.islower() for c in v) and not v.isalpha():
                    yield s.start(), s.end(), "SECRET_AWS_KEY"
    if "@namevalue" in present and _VALUE_KEY.search(low):
        # a match starts at its name, or at the quote just before it
        for m in anchored(_NAME_VALUE, text, low, ("name",), (0, 1)):
            kind = key_kind(m.group("key"))
            value = m.group("v")
            if kind is None or is_placeholder(value, m.group("key")):
                continue
            if kind is TOKEN and not looks_random(value):
                continue
            yield m.start("v"), m.end("v"), kind


_MAX_LINE = 4000  # a longer line is read in windows around each hint
_DIRECTIVE = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]*)?[\w.\-]*(?i:pass|pwd|secret|token|key|auth|cred)"
                        r"[\w.\-]*[ \t]+\S")


def context_patterns() -> dict[str, str]:
    """This module's gates for ``GateScan`` (``curate.steps.secrets_gates``)."""
    words = {*_CLI_ANY, *(w for gate in _CLI_GATES for group in gate for w in group), *(lit for _, _, lit in _CALLS), "(",
             *_HINT_WORDS}
    return secrets_gates.context_patterns({w for w in words if not w.startswith("@")}, _HINT.pattern,
                                          _CALL_HINT.pattern)


def active_names() -> frozenset[str]:
    """Gate names at least one of which a text holds wherever ``ContextSecrets.detect`` can find
    anything (the hint lines, a command's head, a URL or query-string credential, a call's name or
    a key/value call, an AWS key id, a name/value pair)."""
    return frozenset({"@hintline", *_CLI_HEADS, "@urlcred", "@param", "@kv", *(lit for _, _, lit in _CALLS),
                      "@awsid", "@namevalue"})


_SCAN: list[GateScan] = []


def _lowered(text: str) -> tuple[str, frozenset[str]]:
    """``GateScan.lowered`` of this module's gates (the scan built once per process)."""
    if not _SCAN:
        _SCAN.append(GateScan(context_patterns()))
    return _SCAN[0].lowered(text)


class ContextSecrets:
    """Spans of secrets named by their context (see the module docstring)."""

    def detect(self, text: str, low: str | None = None, present: frozenset[str] | None = None
               ) -> list[tuple[int, int, str]]:
        """``low``, ``present``: ``GateScan.lowered(text)`` of ``context_patterns()`` or of a scan
        holding its patterns (both or neither)."""
        if low is None or present is None:
            low, present = _lowered(text)
        out: list[tuple[int, int, str]] = []
        bound = 0  # no line before this offset is looked at again
        covered = -1  # end of the last window read on a very long line
        ls = le = -1
        hints = literal_spans(low, tuple(w for w in _HINT_WORDS if w in present)) if "@hintline" in present else ()
        for hs, he in hints:
            if hs <= le and le - ls <= _MAX_LINE:
                continue  # this line was read whole
            if not _HINT_OP.match(low, he) and not (
                    _HINT_WORD.match(low, he) and _HINT_HEAD.search(low, max(0, hs - 120), hs)):
                continue
            if hs > le:  # a new line: its bounds, found once
                r = text.rfind("\n", bound, hs)
                ls = r + 1 if r >= 0 else bound
                le = text.find("\n", he)
                le = len(text) if le < 0 else le
                bound = le
                if le - ls <= _MAX_LINE:
                    out += [(ls + s, ls + e, k) for s, e, k in self._line(text[ls:le])]
                    continue
            if le - ls > _MAX_LINE and hs >= covered:
                # a very long line (minified JSON): one window per hint not yet read
                ws, we = max(ls, hs - 200), min(le, he + 800)
                covered = we - 100
                out += [(ws + s, ws + e, k) for s, e, k in self._line(text[ws:we])]
        for finder in (command_lines, urls, call_arguments, pairs):
            out += finder(text, low, present)
        return out

    @staticmethod
    def _line(line: str) -> Iterator[tuple[int, int, str]]:
        # an assignment needs an operator, a setter call or a directive's shape ("requirepass V",
        # netrc "machine H login U password V"); prose lines rarely have any
        if "=" in line or ":" in line or "(" in line or _DIRECTIVE.match(line) or "login" in line or " set " in line:
            yield from assignments(line)
