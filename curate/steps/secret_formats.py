"""Token formats of current providers that detect-secrets 1.5 does not ship, as detect-secrets plugins.

Each class is a ``detect_secrets.plugins.base.RegexBasedDetector`` (the plugin API of
detect-secrets: ``secret_type`` + ``denylist``), so ``curate.steps.secrets.SecretsDetector`` runs
them exactly like detect-secrets' own plugins, behind the same cheap gates. Formats as the
providers publish them (token prefixes and lengths), cross-checked against the default rules of
gitleaks (``config/gitleaks.toml``, MIT) and GitHub's secret-scanning partner patterns:

| provider | format | source |
| --- | --- | --- |
| GitHub fine-grained PAT | ``github_pat_`` + 22 + ``_`` + 59 alphanumerics | GitHub blog "Introducing fine-grained PATs" (2022) |
| Google API key | ``AIza`` + 35 of ``[A-Za-z0-9_-]`` | Google Cloud "API keys" docs; gitleaks ``gcp-api-key`` |
| Google OAuth client secret | ``GOCSPX-`` + 28 | Google Identity docs; gitleaks ``gcp-...`` |
| Google OAuth access token | ``ya29.`` + token | Google Identity docs |
| Anthropic API key | ``sk-ant-api03-`` / ``sk-ant-admin01-`` + 93 + ``AA`` | gitleaks ``anthropic-api-key`` |
| OpenAI project/service keys | ``sk-proj-`` / ``sk-svcacct-`` / ``sk-admin-`` + 40+ | OpenAI API key docs (detect-secrets covers ``T3BlbkFJ`` keys) |
| Hugging Face token | ``hf_`` + 34 letters | Hugging Face "User access tokens" docs |
| npm access token | ``npm_`` + 36 alphanumerics | npm docs "About access tokens" (2021 format) |
| Shopify | ``shpat_``/``shpca_``/``shppa_``/``shpss_`` + 32 hex | Shopify partner docs; gitleaks |
| DigitalOcean | ``dop_v1_``/``doo_v1_``/``dor_v1_`` + 64 hex | DigitalOcean token docs |
| Databricks | ``dapi`` + 32 hex (``-N`` suffix) | Databricks PAT docs; gitleaks |
| HashiCorp Vault / Terraform Cloud | ``hvs.``/``hvb.`` + 90+, ``*.atlasv1.*`` | Vault token docs; gitleaks |
| Azure AD client secret | 3 chars + digit + ``Q~`` + 31-34 | Microsoft Entra docs; gitleaks ``azure-ad-client-secret`` |
| Stripe (restricted, test, webhook) | ``rk_/sk_test_``, ``whsec_`` + 24+ | Stripe API keys docs (detect-secrets covers ``*_live_``) |
| Slack app-level / config tokens | ``xapp-1-...``, ``xoxe.xox[bp]-1-...`` | Slack token types docs |
| Postman, Doppler, Linear, New Relic, Grafana, age, Atlassian, PlanetScale, Pulumi, SendGrid-style | see ``FORMATS`` | gitleaks rules of the same names |
"""

from __future__ import annotations

import re

from detect_secrets.plugins.base import RegexBasedDetector

# (class name, our type, gate literals (lower-cased, one must occur), patterns); a pattern
# matches the whole token, so the redacted span is the token
FORMATS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("GitHubFineGrainedDetector", "SECRET_GITHUB_TOKEN", ("github_pat_",),
     (r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}", r"github_pat_\w{70,90}")),
    ("GoogleApiKeyDetector", "SECRET_GOOGLE_KEY", ("aiza",), (r"AIza[0-9A-Za-z_\-]{35}",)),
    ("GoogleOAuthDetector", "SECRET_GOOGLE_KEY", ("gocspx-", "ya29."),
     (r"GOCSPX-[A-Za-z0-9_\-]{28}", r"ya29\.[0-9A-Za-z_\-]{20,}")),
    ("AnthropicDetector", "SECRET_ANTHROPIC_KEY", ("sk-ant-",),
     (r"sk-ant-(?:api03|admin01)-[A-Za-z0-9_\-]{80,110}",)),
    ("OpenAIProjectDetector", "SECRET_OPENAI_KEY", ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
     (r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,200}",)),
    ("HuggingFaceDetector", "SECRET_HUGGINGFACE_TOKEN", ("hf_",), (r"(?<![A-Za-z0-9_])hf_[A-Za-z]{34}(?![A-Za-z0-9])",)),
    ("NpmTokenDetector", "SECRET_NPM_TOKEN", ("npm_",), (r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",)),
    ("ShopifyDetector", "SECRET_SHOPIFY_TOKEN", ("shpat_", "shpca_", "shppa_", "shpss_"),
     (r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",)),
    ("DigitalOceanDetector", "SECRET_DIGITALOCEAN_TOKEN", ("_v1_",), (r"do[opr]_v1_[a-f0-9]{64}",)),
    ("DatabricksDetector", "SECRET_DATABRICKS_TOKEN", ("dapi",), (r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])",)),
    ("HashiCorpDetector", "SECRET_HASHICORP_TOKEN", ("hvs.", "hvb.", ".atlasv1."),
     (r"hv[sb]\.[A-Za-z0-9_\-]{24,}", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}")),
    ("AzureClientSecretDetector", "SECRET_AZURE_KEY", ("q~",),
     (r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",)),
    ("StripeMoreDetector", "SECRET_STRIPE_KEY", ("k_test_", "rk_live_", "whsec_", "k_live_"),
     (r"(?:sk|rk)_(?:test|live)_[0-9a-zA-Z]{24,247}", r"whsec_[A-Za-z0-9+/=]{32,}")),
    ("SlackAppDetector", "SECRET_SLACK_TOKEN", ("xapp-", "xoxe"),
     (r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{100,}")),
    ("PostmanDetector", "SECRET_POSTMAN_KEY", ("pmak-",), (r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",)),
    ("DopplerDetector", "SECRET_DOPPLER_TOKEN", ("dp.",), (r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",)),
    ("LinearDetector", "SECRET_LINEAR_KEY", ("lin_api_",), (r"lin_api_[A-Za-z0-9]{40}",)),
    ("NewRelicDetector", "SECRET_NEWRELIC_KEY", ("nrak-", "nrjs-", "nrii-"),
     (r"NR(?:AK|JS|II)-[A-Za-z0-9]{19,32}",)),
    ("GrafanaDetector", "SECRET_GRAFANA_TOKEN", ("glc_", "glsa_"),
     (r"glc_[A-Za-z0-9+/]{32,400}={0,2}", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}")),
    ("AgeKeyDetector", "SECRET_AGE_KEY", ("age-secret-key-1",), (r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",)),
    ("AtlassianDetector", "SECRET_ATLASSIAN_TOKEN", ("atatt3",), (r"ATATT3[A-Za-z0-9_\-=]{150,200}",)),
    ("PlanetScaleDetector", "SECRET_PLANETSCALE_TOKEN", ("pscale_",), (r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}",)),
    ("PulumiDetector", "SECRET_PULUMI_TOKEN", ("pul-",), (r"(?<![A-Za-z0-9])pul-[a-f0-9]{40}(?![A-Za-z0-9])",)),
    ("GitLabMoreDetector", "SECRET_GITLAB_TOKEN", ("glpat-",), (r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9]{2}\.[A-Za-z0-9]{9})?",)),
    ("SentryDetector", "SECRET_SENTRY_TOKEN", ("sntrys_", "sntryu_"),
     (r"sntrys_eyJ[A-Za-z0-9+/=_\-]{60,}", r"sntryu_[a-f0-9]{64}")),
)


def _plugin(name: str, kind: str, patterns: tuple[str, ...]) -> type[RegexBasedDetector]:
    return type(name, (RegexBasedDetector,), {"secret_type": kind, "denylist": [re.compile(p) for p in patterns],
                                              "__module__": __name__})


PROVIDER_PLUGINS: dict[str, tuple[type[RegexBasedDetector], tuple[str, ...]]] = {
    name: (_plugin(name, kind, pats), gates) for name, kind, gates, pats in FORMATS}
PROVIDER_TYPES = tuple(sorted({kind for _, kind, _, _ in FORMATS}))
