"""Default context words of the card and phone recognizers (``pii.card_context`` / ``pii.phone_context``).

Kept apart from ``curate.steps.pii_recognizers`` so that reading ``PIIConfig`` (every ``corpusmix``
start builds its argument parser from it) does not import presidio, which takes seconds.
"""

__all__ = ["CARD_CONTEXT", "PHONE_CONTEXT", "SSN_CONTEXT"]

CARD_CONTEXT = ("card", "visa", "mastercard", "amex", "american express", "maestro", "discover", "diners",
                "jcb", "unionpay", "credit", "debit", "cc", "karte", "kreditkarte", "carte", "tarjeta",
                "cartão", "carta", "kaart", "karta", "карта", "卡", "カード")
PHONE_CONTEXT = ("call", "calls", "called", "calling", "phone", "phoned", "telephone", "tel", "mobile", "cell",
                 "fax", "reach", "contact", "ph", "mob", "whatsapp", "sms", "text me", "dial", "hotline",
                 "téléphone", "tél", "portable", "telefon", "handy", "rufnummer",
                 "teléfono", "telefono", "celular", "móvil", "telefone", "телефон", "тел", "电话", "手机",
                 "電話", "携帯", "nomor", "telepon", "फ़ोन", "फोन", "ফোন", "মোবাইল")
SSN_CONTEXT = ("ssn", "ssns", "ss#", "ss no", "ss no.", "social security", "social security number",
               "social security no", "social sec", "soc sec", "soc. sec.", "soc.sec.", "social_security_number",
               "social_security", "ssn_number", "socialsecuritynumber")
