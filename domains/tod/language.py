"""What the agent and the customer say, in English, Spanish and French: our own templates.

The instructions stay in English; only the conversation changes language. The customer
simulator reads agent turns in any of the three languages (and English whatever the
conversation's language), so it recognises what an agent asks for by :data:`ASKS` keywords.
"""

from __future__ import annotations

from typing import Final

# agent asks for a customer fact
ASK: Final = {
    "en": {"account_id": "Could you give me your account id?",
           "order_id": "What is the order id?",
           "zip_code": "To verify you, what is the zip code on the account?",
           "email": "Which email address should we use?",
           "new_address": "What is the new delivery address?",
           "has_receipt": "Do you still have the receipt?",
           "item_damaged": "Did the item arrive damaged?"},
    "es": {"account_id": "¿Me puede dar su id de cuenta?",
           "order_id": "¿Cuál es el id del pedido?",
           "zip_code": "Para verificarle, ¿cuál es el código postal de la cuenta?",
           "email": "¿Qué dirección de correo debemos usar?",
           "new_address": "¿Cuál es la nueva dirección de entrega?",
           "has_receipt": "¿Conserva el recibo?",
           "item_damaged": "¿El artículo llegó dañado?"},
    "fr": {"account_id": "Pouvez-vous me donner votre id de compte ?",
           "order_id": "Quel est l'id de la commande ?",
           "zip_code": "Pour vous vérifier, quel est le code postal du compte ?",
           "email": "Quelle adresse e-mail devons-nous utiliser ?",
           "new_address": "Quelle est la nouvelle adresse de livraison ?",
           "has_receipt": "Avez-vous toujours le reçu ?",
           "item_damaged": "L'article est-il arrivé abîmé ?"},
}  # fmt: skip
# keywords (lower case) by which the customer recognises a question about a fact
ASKS: Final = {
    "account_id": ("account id", "id de cuenta", "id de compte"),
    "order_id": ("order id", "id del pedido", "id de la commande"),
    "zip_code": ("zip code", "código postal", "code postal"),
    "email": ("email address", "dirección de correo", "adresse e-mail"),
    "new_address": ("new delivery address", "nueva dirección", "nouvelle adresse"),
    "has_receipt": ("receipt", "recibo", "reçu"),
    "item_damaged": ("damaged", "dañado", "abîmé"),
}
# the customer's answer: text facts fill {value}; yes/no facts pick by the value
ANSWER: Final = {
    "en": {"text": ("It is {value}.", "Sure: {value}"), True: "Yes.", False: "No."},
    "es": {"text": ("Es {value}.", "Claro: {value}"), True: "Sí.", False: "No."},
    "fr": {"text": ("C'est {value}.", "Bien sûr : {value}"), True: "Oui.", False: "Non."},
}
OPENING: Final = {
    "en": ("Hi, {says}.", "Hello, {says}. Can you help?"),
    "es": ("Hola, {says}.", "Buenas, {says}. ¿Me ayuda?"),
    "fr": ("Bonjour, {says}.", "Bonjour, {says}. Pouvez-vous m'aider ?"),
}
CLOSING_AGENT: Final = {
    "en": "That is all taken care of. Is there anything else?",
    "es": "Todo resuelto. ¿Algo más?",
    "fr": "C'est réglé. Autre chose ?",
}
CLOSING_USER: Final = {
    "en": ("No, that's all. Thanks!", "Nothing else, goodbye."),
    "es": ("No, eso es todo. ¡Gracias!", "Nada más, adiós."),
    "fr": ("Non, c'est tout. Merci !", "Rien d'autre, au revoir."),
}
CLOSES: Final = ("anything else", "algo más", "autre chose")
# the customer's reply to an action its goal does not want (live episodes)
OBJECTION: Final = {
    "en": "That is not what I asked for. I wanted help because {says}.",
    "es": "Eso no es lo que pedí. Necesitaba ayuda porque {says}.",
    "fr": "Ce n'est pas ce que j'ai demandé. J'avais besoin d'aide car {says}.",
}
RESTATE: Final = {
    "en": "As I said, {says}.",
    "es": "Como dije, {says}.",
    "fr": "Comme je l'ai dit, {says}.",
}
# the agent reports the actions it took since it last spoke, before its next words
DONE: Final = {"en": "Done: {actions}. ", "es": "Hecho: {actions}. ", "fr": "Fait : {actions}. "}


def say_fact(lang: str, phrasing: int, value: object) -> str:
    """The customer's answer giving ``value``."""
    words = ANSWER[lang]
    if isinstance(value, bool):
        return str(words[value])
    return str(words["text"][phrasing]).format(value=value)


def read_fact(lang: str, text: str, kind: str) -> object:
    """The value a customer's answer (as :func:`say_fact` writes it) gives; ValueError when
    the answer gives none."""
    text = text.strip()
    words = ANSWER[lang]
    if kind == "bool":
        for flag in (True, False):
            if text == words[flag]:
                return flag
        raise ValueError(f"not a yes/no answer: {text!r}")
    for template in words["text"]:
        head, _, tail = str(template).partition("{value}")
        if text.startswith(head) and text.endswith(tail) and len(text) > len(head + tail):
            return text[len(head):len(text) - len(tail)]
    raise ValueError(f"the answer {text!r} gives no value")


def asked(text: str) -> list[str]:
    """The customer facts an agent turn asks for, in the order the facts are declared."""
    lowered = text.lower()
    return [fact for fact, words in ASKS.items() if any(w in lowered for w in words)]
