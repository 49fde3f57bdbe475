"""File shapes of the PII/secrets evaluation set (``curate.evaluation.pii_eval``): one builder per kind of file.

Every builder takes ``Values`` and returns a ``Doc`` whose labelled spans are the values it wrote.
``S``/``P``/``N`` label a secret (with its provider family and where it stands), a PII value and
a hard negative.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from curate.evaluation.pii_eval_values import Doc, Values

PROVIDER_KEYS = {
    "github": ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PAT"], "gitlab": ["GITLAB_TOKEN", "GL_TOKEN"],
    "google": ["GOOGLE_API_KEY", "FIREBASE_API_KEY", "GOOGLE_CLIENT_SECRET", "MAPS_KEY"],
    "slack": ["SLACK_BOT_TOKEN", "SLACK_WEBHOOK"], "stripe": ["STRIPE_SECRET_KEY", "STRIPE_KEY"],
    "openai": ["OPENAI_API_KEY"], "anthropic": ["ANTHROPIC_API_KEY"], "huggingface": ["HF_TOKEN", "HUGGINGFACE_TOKEN"],
    "npm": ["NPM_TOKEN"], "pypi": ["TWINE_PASSWORD", "PYPI_API_TOKEN"], "sendgrid": ["SENDGRID_API_KEY"],
    "twilio": ["TWILIO_API_KEY", "TWILIO_SID"], "azure": ["AZURE_CLIENT_SECRET"],
    "digitalocean": ["DIGITALOCEAN_ACCESS_TOKEN"], "shopify": ["SHOPIFY_ACCESS_TOKEN"],
    "databricks": ["DATABRICKS_TOKEN"], "hashicorp": ["VAULT_TOKEN"], "discord": ["DISCORD_BOT_TOKEN", "BOT"],
    "telegram": ["TELEGRAM_BOT_TOKEN", "TG"], "mailchimp": ["MAILCHIMP_API_KEY", "MC"], "jwt": ["JWT", "ID_TOKEN"],
    "generic": ["API_TOKEN", "SECRET_KEY", "APP_SECRET", "WEBHOOK_SECRET", "AUTH_TOKEN", "PRIVATE_TOKEN"],
}
FAMILIES = tuple(PROVIDER_KEYS)


def S(v: str, family: str, where: str) -> tuple[str, dict]:  # noqa: N802
    return v, {"label": "secret", "family": family, "where": where}


def P(v: str, typ: str, sub: str = "") -> tuple[str, dict]:  # noqa: N802
    return v, {"label": "pii", "type": typ, "sub": sub}


def N(v: str, kind: str) -> tuple[str, dict]:  # noqa: N802
    return v, {"label": "negative", "kind": kind}


def QS(v: str, family: str, where: str) -> list:  # noqa: N802
    """A secret as a shell user must type it: single-quoted when it holds a character the shell reads."""
    if any(c in v for c in " $&;|<>()!*?#~`\"\\[]{}^") and "'" not in v:
        return ["'", S(v, family, where), "'"]
    return [S(v, family, where)]


def url_pw(v: str) -> str:
    """``v`` in a URL's user-info part: reserved characters percent-encoded (RFC 3986)."""
    from urllib.parse import quote

    return quote(v, safe="")


def _provider(v: Values, d: Doc, sep: str, quote: str = "") -> None:
    fam = v.r.choice(FAMILIES)
    key = v.r.choice(PROVIDER_KEYS[fam])
    d.line(key, sep, quote, S(v.token(fam), fam, "assignment"), quote)


def env_file(v: Values) -> Doc:
    d, r, fk = Doc("env"), v.r, v.us
    d.line("APP_NAME=", fk.slug()).line("APP_ENV=production")
    d.line("APP_KEY=base64:", S(base64.b64encode(bytes(r.randrange(256) for _ in range(32))).decode(),
                                "generic", "assignment"))
    d.line("APP_URL=https://", fk.domain_name()).line("DB_CONNECTION=", r.choice(["mysql", "pgsql"]))
    d.line("DB_HOST=", fk.ipv4_private()).line("DB_PORT=", r.choice(["3306", "5432"]))
    d.line("DB_USERNAME=", fk.user_name()).line("DB_PASSWORD=", S(v.password(), "password", "assignment"))
    d.line("REDIS_PASSWORD=", N(r.choice(["null", "${REDIS_PASS}", "<redis-password>", "changeme_in_prod"][:3]),
                                "placeholder"))
    d.line("MAIL_PASSWORD=", S(v.password(), "password", "assignment"))
    if r.random() < 0.6:
        d.line("AWS_ACCESS_KEY_ID=", S(v.token("aws_key_id"), "aws", "assignment"))
        d.line("AWS_SECRET_ACCESS_KEY=", S(v.token("aws_secret"), "aws", "assignment"))
    for _ in range(r.randint(1, 3)):
        _provider(v, d, "=", r.choice(["", "", '"']))
    d.line("RELEASE_DATE=", N(v.date(), "date")).line("BUILD_NUMBER=", N(v.timestamp(), "timestamp"))
    d.line("APP_VERSION=", N(v.version(), "version"))
    return d


def compose(v: Values) -> Doc:
    d, r, fk = Doc("docker-compose"), v.r, v.us
    db = fk.word()
    d.line('version: "3.8"').line("services:").line("  db:").line("    image: postgres:15")
    d.line("    environment:").line("      POSTGRES_USER: ", fk.user_name())
    d.line("      POSTGRES_PASSWORD: ", S(v.password(), "password", "assignment"))
    d.line("      POSTGRES_DB: ", db).line("    ports:")
    pr = v.negative("port_range")
    d.line('      - "', N(pr, "port_range"), ":", N(pr, "port_range"), '"')
    d.line("  app:").line("    build: .").line("    environment:")
    pw = v.password()
    d.line("      - DATABASE_URL=", r.choice(["postgres", "postgresql"]), "://", fk.user_name(), ":",
           S(url_pw(pw), "password", "url"), "@db:5432/", db)
    d.line("      - REDIS_URL=redis://:", S(url_pw(v.password()), "password", "url"), "@redis:6379/0")
    d.line("      - MYSQL_ROOT_PASSWORD=", S(v.password(), "password", "assignment"))
    d.line("      - ", r.choice(PROVIDER_KEYS["generic"]), "=", S(v.token("generic"), "generic", "assignment"))
    d.line("      - SECRET_NAME=", N(f"{db}-credentials", "placeholder"))
    return d


def kubernetes(v: Values) -> Doc:
    d, r, fk = Doc("kubernetes"), v.r, v.us
    d.line("apiVersion: v1").line("kind: Secret").line("metadata:").line("  name: ", fk.word(), "-credentials")
    d.line('  creationTimestamp: "', N(v.date("%Y-%m-%d"), "date"), 'T10:12:44Z"').line("type: Opaque")
    d.line("stringData:").line("  username: ", fk.user_name()).line("  password: ", S(v.password(), "password", "assignment"))
    d.line("  api-key: ", S(v.token("generic"), "generic", "assignment")).line("---")
    d.line("apiVersion: apps/v1").line("kind: Deployment").line("spec:").line("  template:").line("    spec:")
    d.line("      containers:").line("        - name: app").line("          image: registry.example.com/app:",
                                                                   N(v.version(), "version"))
    d.line("          env:").line("            - name: DB_PASSWORD")
    d.line('              value: "', S(v.password(), "password", "pair"), '"')
    fam = r.choice(FAMILIES)
    d.line("            - name: ", r.choice(PROVIDER_KEYS[fam])).line("              value: ", S(v.token(fam), fam, "pair"))
    d.line("            - name: DB_USER_PASSWORD").line("              valueFrom:").line("                secretKeyRef:")
    d.line("                  name: db-secret").line("                  key: ", N("password", "placeholder"))
    return d


def ini_files(v: Values) -> Doc:
    d, r, fk = Doc("ini"), v.r, v.us
    which = r.choice(["aws", "mycnf", "supervisor", "pypirc", "redis", "netrc", "odbc"])
    if which == "aws":
        for prof in ("default", fk.word()):
            d.line(f"[{prof}]").line("aws_access_key_id = ", S(v.token("aws_key_id"), "aws", "ini"))
            d.line("aws_secret_access_key = ", S(v.token("aws_secret"), "aws", "ini")).line("region = us-east-1")
    elif which == "mycnf":
        d.line("[client]").line("user = ", fk.user_name()).line("password = ", S(v.password(), "password", "ini"))
        d.line("host = localhost").line("port = 3306").line("[mysqld]").line("max_connections = 151")
    elif which == "supervisor":
        d.line("[inet_http_server]").line("port=127.0.0.1:9001").line("username=", fk.user_name())
        d.line("password=", S(v.password(), "password", "ini")).line("[program:worker]")
        d.line("command=/usr/bin/python3 worker.py").line("startsecs=10")
    elif which == "pypirc":
        d.line("[distutils]").line("index-servers = pypi").line("[pypi]").line("username = __token__")
        d.line("password = ", S(v.token("pypi"), "pypi", "ini"))
    elif which == "redis":
        d.line("bind 127.0.0.1 -::1").line("port 6379").line("requirepass ", S(v.password(), "password", "directive"))
        d.line("masterauth ", S(v.password(), "password", "directive")).line("maxmemory 2gb").line("save 900 1")
    elif which == "netrc":
        d.line("machine api.", fk.domain_name(), " login ", fk.user_name(), " password ",
               S(v.password(), "password", "directive"))
    else:
        d.line("[", fk.word(), "]").line("Driver=PostgreSQL Unicode").line("Servername=", fk.hostname())
        d.line("UID=", fk.user_name()).line("PWD=", S(v.password(), "password", "ini"))
    d.line("# generated ", N(v.date(), "date"))
    return d


def toml_json(v: Values) -> Doc:
    d, r, fk = Doc("toml-json"), v.r, v.us
    if r.random() < 0.5:
        d.line("[database]").line('host = "', fk.hostname(), '"').line("port = 5432")
        d.line('user = "', fk.user_name(), '"').line('password = "', S(v.password(), "password", "toml"), '"')
        d.line("[registries.internal]").line('index = "https://', fk.domain_name(), '/git/index"')
        d.line('token = "', S(v.token("generic"), "generic", "toml"), '"')
        d.line("[package]").line('version = "', N(v.version(), "version"), '"')
    else:
        d.line("{").line('  "ConnectionStrings": {').line('    "Default": "Server=', fk.hostname(), ";Database=",
                                                             fk.word(), ";User Id=", fk.user_name(), ";Password=",
                                                             S(v.password(), "password", "connection_string"), ';"')
        d.line("  },").line('  "Jwt": { "Key": "', S(v.token("generic"), "generic", "json"), '", "Issuer": "',
                            fk.domain_name(), '" },')
        fam = r.choice(FAMILIES)
        d.line('  "', r.choice(["apiKey", "api_key", "token", "auth"]), '": "', S(v.token(fam), fam, "json"), '",')
        d.line('  "released": "', N(v.date(), "date"), '",').line('  "buildId": ', N(v.timestamp(), "timestamp"), ",")
        d.line('  "orderRef": "', N(v.negative("order_id"), "order_id"), '"').line("}")
    return d


def shell_history(v: Values) -> Doc:
    d, r, fk = Doc("shell-history"), v.r, v.us
    zsh = r.random() < 0.5
    t = r.randint(1_500_000_000, 1_800_000_000)

    def cmd(*pieces: str | tuple[str, dict]) -> None:
        nonlocal t
        t += r.randint(3, 4000)
        if zsh:
            d.add(": ").add(str(t), label="negative", kind="timestamp").add(f":{r.randint(0, 9)};")
        else:
            d.add("#").add(str(t), label="negative", kind="timestamp").add("\n")
        d.line(*pieces)

    user, host = fk.user_name(), fk.hostname()
    plain = [("ls -la",), ("cd /var/www/", fk.word()), ("git log --oneline -n ", str(r.randint(5, 50))),
             ("kill -9 ", str(r.randint(1000, 4000000))), ("ping -c 4 ", fk.ipv4_public()),
             ("tar xzf backup-", N(v.date("%Y%m%d"), "date"), ".tar.gz"),
             ("sudo iptables -A INPUT -p tcp --dport ", N(v.negative("port_range").replace("-", ":"), "port_range"),
              " -j ACCEPT"),
             ("git checkout ", N(v.us.sha1()[:r.randint(7, 12)], "hash")),
             ("pip install requests==", N(v.version(), "version")), ("ssh -p 2222 ", user, "@", host),
             ("dd if=/dev/zero of=test.img bs=1M count=", str(r.randint(100, 9000))),
             ("date -d @", N(str(r.randint(1_000_000_000, 1_990_000_000)), "timestamp"))]
    secret = [
        lambda: cmd("mysql -u root -p", *QS(v.password(), "password", "cli"), " ", fk.word()),
        lambda: cmd("docker login -u ", user, " -p ", *QS(v.password(), "password", "cli"), " registry.", fk.domain_name()),
        lambda: cmd("sshpass -p '", S(v.password(), "password", "cli"), "' ssh ", user, "@", host),
        lambda: cmd("redis-cli -h ", host, " -a ", *QS(v.password(), "password", "cli"), " ping"),
        lambda: cmd("curl -u ", user, ":", S(url_pw(v.password()), "password", "cli"), " https://", fk.domain_name(), "/api"),
        lambda: cmd("export ", r.choice(PROVIDER_KEYS["generic"]), "=", S(v.token("generic"), "generic", "cli")),
        lambda: cmd("git clone https://", user, ":", S(v.token("github"), "github", "url"), "@github.com/", user,
                    "/", fk.word(), ".git"),
        lambda: cmd("psql postgresql://", user, ":", S(url_pw(v.password()), "password", "url"), "@", host, ":5432/", fk.word()),
        lambda: cmd("PGPASSWORD=", *QS(v.password(), "password", "cli"), " pg_dump -h ", host, " ", fk.word()),
        lambda: cmd('curl -H "Authorization: Bearer ', S(v.token("jwt"), "jwt", "cli"), '" https://', fk.domain_name()),
        lambda: cmd("mysqldump -u", user, " --password=", *QS(v.password(), "password", "cli"), " shop > dump.sql"),
        lambda: cmd("htpasswd -b -c /etc/nginx/.htpasswd ", user, " ", *QS(v.password(), "password", "cli")),
    ]
    for _ in range(r.randint(8, 14)):
        if r.random() < 0.3:
            r.choice(secret)()
        else:
            cmd(*r.choice(plain))
    return d


def code(v: Values) -> Doc:
    d, r, fk = Doc("code"), v.r, v.us
    lang = r.choice(["python", "php", "c", "java", "js", "go"])
    pw, user, host, db = v.password(), fk.user_name(), fk.hostname(), fk.word()
    if lang == "python":
        d.line("import psycopg2").line("PASSWORD_MIN_LENGTH = ", N(str(r.randint(8, 16)), "placeholder"))
        d.line("SECRET_KEY = '", S(v.s(50, "abcdefghijklmnopqrstuvwxyz0123456789!@#%^&*(-_=+)"), "generic", "code"), "'")
        d.line("conn = psycopg2.connect(host='", host, "', user='", user, "', password='",
               S(pw, "password", "code"), "', dbname='", db, "')")
        d.line("r = requests.get(url, auth=('", user, "', '", S(v.password(), "password", "code"), "'))")
        d.line("password = request.form['", N("password", "placeholder"), "']")
        d.line('__version__ = "', N(v.version(), "version"), '"  # released ', N(v.date(), "date"))
    elif lang == "php":
        d.line("<?php").line("define( 'DB_PASSWORD', '", S(pw, "password", "code"), "' );")
        d.line('$conn = mysqli_connect("', host, '", "', user, '", "', S(v.password(), "password", "code"), '", "', db, '");')
        d.line('$pdo = new PDO("mysql:host=', host, ";dbname=", db, '", "', user, '", "',
               S(v.password(), "password", "code"), '");')
        d.line("// build ", N(v.timestamp(), "timestamp"), " uuid ", N(fk.uuid4(), "uuid"))
    elif lang == "c":
        d.line("#include <mysql.h>").line("/* v", N(v.version(), "version"), " */")
        d.line('if (!mysql_real_connect(conn, "', host, '", "', user, '", "', S(pw, "password", "code"), '", "',
               db, '", 3306, NULL, 0)) {').line("    return 1;").line("}")
    elif lang == "java":
        d.line('Connection c = DriverManager.getConnection("jdbc:mysql://', host, ":3306/", db, '", "', user,
               '", "', S(pw, "password", "code"), '");')
        d.line('props.setProperty("password", "', S(v.password(), "password", "code"), '");')
        d.line('private static final String CHECKSUM = "', N(fk.sha256(), "hash"), '";')
    elif lang == "js":
        fam = r.choice(FAMILIES)
        d.line("const apiKey = '", S(v.token(fam), fam, "code"), "';")
        d.line('mongoose.connect("mongodb+srv://', user, ":", S(url_pw(pw), "password", "url"), "@cluster0.", fk.word(),
               '.mongodb.net/', db, '");')
        d.line("headers: { Authorization: `Bearer ${token}` },  // ", N(v.date("%Y-%m-%d"), "date"))
    else:
        d.line("password := \"", S(pw, "password", "code"), '"')
        d.line('db, err := sql.Open("postgres", "host=', host, " user=", user, " password=",
               S(v.password(), "password", "connection_string"), " dbname=", db, ' sslmode=disable")')
        d.line("const BuildTime = ", N(v.timestamp(), "timestamp"))
    if r.random() < 0.3:
        d.line("KEY = \"\"\"", S(v.pem(), "private_key", "code"), '"""')
    return d


def logs(v: Values) -> Doc:
    d, r, fk = Doc("logs"), v.r, v.us
    for _ in range(r.randint(6, 12)):
        pick = r.random()
        if pick < 0.35:
            d.line(fk.ipv4_public(), ' - - [', v.when().strftime("%d/%b/%Y:%H:%M:%S"), ' +0000] "GET /api/orders/',
                   N(v.negative("bare_order_number"), "url_id"), ' HTTP/1.1" 200 ', str(r.randint(100, 99999)),
                   ' "-" "', fk.user_agent(), '"')
        elif pick < 0.6:
            d.line(N(v.date("%Y-%m-%d"), "date"), "T", v.when().strftime("%H:%M:%S"), ".", str(r.randint(100, 999)), "Z INFO [req=",
                   N(fk.uuid4(), "uuid"), "] order=", N(v.negative("order_id"), "order_id"), " took ",
                   str(r.randint(1, 900)), "ms size=", N(v.negative("byte_count"), "byte_count"))
        elif pick < 0.75:
            d.line("ts=", N(v.timestamp(), "timestamp"), " level=info msg=\"payment accepted\" card=",
                   P(v.card(), "CREDIT_CARD", "log"), " user=", fk.user_name())
        elif pick < 0.85:
            d.line("ts=", N(v.timestamp(), "timestamp"), " level=warn msg=\"callback\" phone=",
                   P(v.us.phone_number(), "PHONE_NUMBER", "log"))
        elif pick < 0.93:
            d.line(v.when().strftime("%b %d %H:%M:%S"), " ", fk.hostname(), " sshd[", str(r.randint(300, 99999)),
                   "]: Accepted password for ", fk.user_name(), " from ", fk.ipv4_public(), " port ",
                   str(r.randint(1024, 65535)), " ssh2")
        else:
            d.line("DEBUG connecting with api_key=", S(v.token("generic"), "generic", "log"), " retry=",
                   str(r.randint(1, 5)))
    return d


def changelog(v: Values) -> Doc:
    d, r, fk = Doc("changelog"), v.r, v.us
    pkg = fk.word()
    for _ in range(r.randint(2, 4)):
        if r.random() < 0.6:  # Debian changelog (Debian policy 4.4)
            d.line(pkg, " (", N(v.version(), "version"), ") unstable; urgency=medium").line()
            d.line("  * New upstream release ", N(v.version(), "version"), ".")
            d.line("  * Fix CVE-", str(r.randint(2015, 2025)), "-", str(r.randint(1000, 99999)), ". (Closes: #",
                   N(str(r.randint(900000, 1099999)), "bug_number"), ")")
            d.line("  * Update timestamp to ", N(v.timestamp(), "timestamp"), " and date to ", N(v.date(), "date"))
            d.line().line(" -- ", fk.name(), " <", fk.email(), ">  ", v.when().strftime("%a, %d %b %Y %H:%M:%S +0000"))
            d.line()
        else:  # keep-a-changelog Markdown
            d.line("## [", N(v.version(), "version"), "] - ", N(v.date("%Y-%m-%d"), "date")).line("### Fixed")
            d.line("- Crash on empty input (#", str(r.randint(100, 99999)), ", ", N(fk.sha1()[:r.randint(7, 10)], "hash"), ")")
            d.line("- Bump dependency to ", N(v.version(), "version"), " (released ", N(v.date(), "date"), ")")
            d.line()
    return d


def orders_csv(v: Values) -> Doc:
    d, r, fk = Doc("orders-csv"), v.r, v.us
    cols = ["order_id", "order_date", "customer", "phone", "card_number", "ssn", "iban", "amount", "ref"]
    cols = [c for c in cols if c in ("order_id", "ssn", "card_number") or r.random() < 0.7]
    delim = r.choice([",", ";", "\t", ","])
    ssn_name = r.choice(["ssn", "SSN", "customer_ssn", "Social Security Number"])
    d.line(delim.join(ssn_name if c == "ssn" else c for c in cols))
    sep = r.random() < 0.5
    for _ in range(r.randint(4, 10)):
        cells: list = []
        for c in cols:
            cells.append({"order_id": lambda: N(v.negative("order_id"), "order_id"),
                          "order_date": lambda: N(v.date(), "date"), "customer": fk.name,
                          "phone": lambda: P(fk.phone_number(), "PHONE_NUMBER", "csv"),
                          "card_number": lambda: P(v.card(), "CREDIT_CARD", "csv"),
                          "ssn": lambda: P(v.ssn(sep), "US_SSN", "csv_sep" if sep else "csv_nosep"),
                          "iban": lambda: P(v.iban(), "IBAN_CODE", "csv"),
                          "amount": lambda: f"{r.randint(1, 9999)}.{r.randint(0, 99):02d}",
                          "ref": lambda: N(v.negative(r.choice(["luhn_invalid", "bare_order_number", "ean13"])),
                                          "reference")}[c]())
            cells.append(delim)
        d.line(*cells[:-1])
    return d


def bibliography(v: Values) -> Doc:
    d, r, fk = Doc("bibliography"), v.r, v.us
    for _ in range(r.randint(4, 8)):
        pick = r.random()
        if pick < 0.3:
            d.line(fk.name(), ". ", fk.catch_phrase(), ". ", fk.company(), ", ", str(r.randint(1950, 2024)),
                   ". ISBN ", N(fk.isbn13(), "isbn13"), ".")
        elif pick < 0.5:
            d.line(fk.name(), " (", str(r.randint(1950, 2024)), "). ", fk.catch_phrase(), ". ISBN-10: ",
                   N(fk.isbn10(), "isbn10"))
        elif pick < 0.7:
            d.line(fk.name(), ". ", fk.catch_phrase(), ". J. ", fk.word().capitalize(), " ", str(r.randint(1, 99)),
                   "(", str(r.randint(1, 12)), "), ", str(r.randint(1, 500)), "-", str(r.randint(501, 999)),
                   ". doi:", N(v.negative("doi"), "doi"))
        elif pick < 0.8:
            d.line(fk.company(), " Review, ISSN ", N(v.issn(), "issn"), ", published ", N(v.date(), "date"))
        elif pick < 0.9:
            d.line("See ", N(fk.isbn10(), "isbn10"), " and ", N(fk.isbn13(), "isbn13"), " in the catalogue.")
        else:
            d.line("EAN ", N(fk.ean13(), "ean13"), ", retail ", str(r.randint(5, 90)), ".99")
    return d


def records(v: Values) -> Doc:
    """HR / customer records in prose, forms and JSON: SSNs named by their context, cards, IBANs."""
    d, r, fk = Doc("records"), v.r, v.us
    for _ in range(r.randint(3, 6)):
        sep = r.random() < 0.5
        sub = "sep" if sep else "nosep"
        pick = r.random()
        if pick < 0.25:
            d.line(fk.name(), "'s Social Security number is ", P(v.ssn(sep), "US_SSN", sub), ".")
        elif pick < 0.45:
            d.line('{"name": "', fk.name(), '", "ssn": "', P(v.ssn(sep), "US_SSN", sub), '", "dob": "',
                   N(v.date("%Y-%m-%d"), "date"), '"}')
        elif pick < 0.6:
            d.line("SSN: ", P(v.ssn(sep), "US_SSN", sub), "   Employee ID: ", N(v.negative("order_id"), "order_id"))
        elif pick < 0.7:
            d.line("SSN#", P(v.ssn(sep), "US_SSN", sub), " on file since ", N(v.date(), "date"))
        elif pick < 0.85:
            d.line("Please charge my card ", P(v.card(), "CREDIT_CARD", "prose"), " for invoice ",
                   N(v.negative("order_id"), "order_id"), ".")
        else:
            d.line("Pay to IBAN ", P(v.iban(), "IBAN_CODE", "prose"), " by ", N(v.date(), "date"), ", order #",
                   N(v.negative("bare_order_number"), "bare_order_number"), ".")
    return d


def credential_prose(v: Values) -> Doc:
    """Tokens quoted in issue threads and docs, outside any assignment: the format alone says."""
    d, r, fk = Doc("issue-thread"), v.r, v.us
    for _ in range(r.randint(2, 4)):
        fam = r.choice(FAMILIES[:-1])
        d.line(fk.sentence(), " I ran it with `", S(v.token(fam), fam, "prose"), "` and got error ",
               str(r.randint(400, 599)), " at ", N(v.date(), "date"), ".")
    if r.random() < 0.5:
        d.line("```").line(S(v.pem(), "private_key", "prose")).line("```")
    return d


BUILDERS: dict[str, Callable[[Values], Doc]] = {
    "env": env_file, "docker-compose": compose, "kubernetes": kubernetes, "ini": ini_files,
    "toml-json": toml_json, "shell-history": shell_history, "code": code, "logs": logs, "changelog": changelog,
    "orders-csv": orders_csv, "bibliography": bibliography, "records": records, "issue-thread": credential_prose,
}
