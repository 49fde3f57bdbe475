"""Where the matches of the secrets scan's command-line and call patterns start
(``curate.steps.secrets_context``), for ``gate_scan.anchored``: those patterns are tried only there."""

from __future__ import annotations

# where a match of a _CLI pattern starts, relative to an occurrence of one of its heads (its gate's
# first group) in the lower-cased text: every match of these holds a head that many characters in
# ("unzip" holds "zip" 2 in); the others start before a head at any distance ("docker login")
_CLI_STARTS: dict[int, tuple[int, ...]] = {0: (0,), 2: (0,), 3: (0,), 4: (0,), 5: (0,), 6: (0,), 7: (0,), 8: (0,),
                                           9: (0,), 11: (0, 2), 12: (0,), 13: (0,), 15: (0,), 16: (0,)}
# where a call pattern's match starts, relative to an occurrence of its literal (``anchored``); the
# others (``new\s+PDO``, a gate that is no literal of every match) are searched whole
_CALL_STARTS: dict[str, tuple[int, ...]] = {
    "mysql_real_connect": (0,), "_connect": (5, 6), "getconnection": (0,), ".login": (0,), "networkcredential": (0,),
    "usernamepassword": (0,), "passwordauthentication": (0,), "set_password": (0,), "bind_s": (0, 7),
    "ldap_bind": (0,), ".connect": (6, 7, 8, 9, 15), "basicauth": (0,)}
# patterns whose matches start on a literal other than their gate's: (heads, starts) for
# ``anchored``; each match starts on one of these heads (in the lower-cased text), 0 characters
# before it
_CLI_ANCHORS: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {
    # "docker login" and the like start on the program's name
    1: (("docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "helm", "az", "cf"), (0,)),
    10: ((" -pass", "\t-pass"), (0,)),  # " -passin pass:V"
    17: (("x-",), (0,)),  # "X-Api-Key: V"
}
_CALL_ANCHORS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "mysqli": (("new",), (0,)), "pdo": (("new",), (0,)), "auth(": (("http",), (0,)), "@authcall": (("auth",), (0,))}
