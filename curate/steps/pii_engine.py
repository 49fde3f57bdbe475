"""presidio ``AnalyzerEngine`` construction for the PII step (``curate.steps.pii``), offline.

* ``build_analyzer(cfg, part=...)``: the engine with the recognizers of ``cfg.entities``: presidio's
  e-mail (tldextract on its bundled suffix list), IBAN, SSN, IP and libphonenumber phone
  recognizers plus ``CardRecognizer`` / ``ContextPhoneRecognizer`` (``pii_recognizers``), with
  ``NoOpNlpEngine`` (no model, no download). ``part`` splits the registry for the prefilter:
  ``cheap`` (everything but libphonenumber's matcher) and ``matcher``; ``all`` is the whole
  registry (the whole-text path and the benchmark's anchor).
* ``build_person_analyzer(model, min_score)``: PERSON through an INSTALLED spaCy model; a clear
  error naming the model otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from corpusmix.config import ConfigError


class EngineSettings(Protocol):
    """What ``build_analyzer`` reads of the PII step's config (``curate.steps.pii.PIIConfig``)."""

    @property
    def entities(self) -> Sequence[str]: ...
    @property
    def card_context(self) -> Sequence[str]: ...
    @property
    def phone_context(self) -> Sequence[str]: ...
    @property
    def phone_regions(self) -> Sequence[str]: ...
    @property
    def context_chars(self) -> int: ...
    @property
    def min_score(self) -> float: ...


def offline_email_recognizer() -> Any:
    """presidio's EmailRecognizer whose tldextract uses the bundled suffix list (no network)."""
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            # the domain after the last "@": tldextract reads a "?" or "/" in the local part
            # ("means?jo@example.com", legal in RFC 5322) as the start of a URL query or path
            return extract(pattern_text.rsplit("@", 1)[-1]).fqdn != ""

    return OfflineEmailRecognizer()


def build_analyzer(cfg: EngineSettings, *, part: str = "all") -> Any:
    """An ``AnalyzerEngine`` with the recognizers of ``cfg.entities``; nothing downloaded.

    ``part``: ``all`` (every recognizer: the whole-text path and the benchmark's anchor),
    ``cheap`` (all but libphonenumber's matcher: run on candidate windows) or ``matcher`` (only
    libphonenumber: run on digit clusters no cheaper recognizer already settled).
    """
    from phonenumbers import re_util
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
    from presidio_analyzer.nlp_engine import NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    from curate.steps.pii_recognizers import CardRecognizer, ContextPhoneRecognizer

    # libphonenumber compiles its metadata patterns through re's 512-entry cache, which several
    # regions overflow: every check then recompiles. Its own unbounded cache (a few MB) ends that.
    re_util.enable_pattern_cache()

    cheap = {
        "EMAIL_ADDRESS": offline_email_recognizer,
        # ours replaces presidio's CreditCardRecognizer: 12-19 digits, issuer table, card words
        "CREDIT_CARD": lambda: CardRecognizer(context_words=cfg.card_context, context_chars=cfg.context_chars),
        "PHONE_NUMBER": lambda: ContextPhoneRecognizer(context_words=cfg.phone_context,
                                                       context_chars=cfg.context_chars),
        "IBAN_CODE": IbanRecognizer,
        "US_SSN": UsSsnRecognizer,
        "IP_ADDRESS": IpRecognizer,
    }
    recognizers = []
    if part in ("all", "cheap"):
        recognizers += [cheap[t]() for t in cfg.entities if t in cheap]
    if part in ("all", "matcher") and "PHONE_NUMBER" in cfg.entities:
        recognizers.append(PhoneRecognizer(supported_regions=tuple(cfg.phone_regions)))

    class NoContext(ContextAwareEnhancer):
        """With ``NoOpNlpEngine`` there are no tokens, so the default lemma enhancer can change no
        score; it only deep-copies every result. Skipping it gives identical output."""

        def __init__(self) -> None:
            super().__init__(0.0, 0.0, 0, 0)

        def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):  # type: ignore[no-untyped-def]
            return raw_results

    nlp = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "noop"}])
    return AnalyzerEngine(registry=RecognizerRegistry(recognizers=recognizers, supported_languages=["en"]),
                          nlp_engine=nlp, supported_languages=["en"], default_score_threshold=cfg.min_score,
                          context_aware_enhancer=NoContext())


def build_person_analyzer(model: str, min_score: float) -> Any:
    """An ``AnalyzerEngine`` that finds PERSON with an installed spaCy model (never downloads), or
    the name-list detector for ``census-names`` (:mod:`curate.steps.person_names`)."""
    from pathlib import Path

    from curate.steps.person_names import NAME_LISTS, NameListPersons

    if model == NAME_LISTS:
        return NameListPersons()

    import spacy
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer

    if not (Path(model).is_dir() or spacy.util.is_package(model)):
        raise ConfigError(f"pii.person_model {model!r} is neither a folder nor an installed spaCy package; "
                          f"install it (pip install {model}) or set pii.person_model to null")
    nlp = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model}])
    registry = RecognizerRegistry(recognizers=[SpacyRecognizer(supported_entities=["PERSON"])],
                                  supported_languages=["en"])
    return AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=["en"],
                          default_score_threshold=min_score)
