"""The customer intents: each one's instruction as a condition-action tree, and how a customer
states it in English, Spanish and French (our own wording).

Seven procedure shapes cover the paper's compositions (single condition, and, or, chain of
actions, selection with else-if / otherwise, nesting up to four levels); each intent fills a
shape with its own actions, thresholds and texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .conditions import All, Any_, Atom, Condition
from .facts import FACTS
from .trees import Arg, Do, If, Step

LANGUAGES: Final = ("en", "es", "fr")


def do(action: str, **args: str) -> Do:
    """An action; an argument naming a fact takes its value, any other text is literal."""
    return Do(action, tuple(
        (k, Arg(fact=v) if v in FACTS else Arg(literal=v)) for k, v in args.items()))  # fmt: skip


def is_(fact: str, value: object) -> Atom:
    return Atom(fact, "is", value)


ACCOUNT = do("pull_up_account", account_id="account_id")


def refund_shape(final: str, reason: str, window: int) -> tuple[Step, ...]:
    """Or, nesting, a chain, and an and-condition in an else-if."""
    lenient: Condition = Any_((is_("membership", "gold"),
                               Atom("days_since_purchase", "is at most", window)))
    silver_late = All((is_("membership", "silver"),
                       Atom("days_since_purchase", "is at most", 2 * window)))
    return (
        ACCOUNT,
        do("membership_lookup", account_id="account_id"),
        do("validate_purchase", order_id="order_id"),
        If(((lenient, (If(((is_("has_receipt", True), (
            do("record_reason", order_id="order_id", reason=reason),
            do(final, order_id="order_id"),
            do("make_shipping_label", order_id="order_id"))),),
            (do("issue_store_credit", order_id="order_id"),)),)),
            (silver_late, (do("issue_store_credit", order_id="order_id"),))),
           (do("notify_manager", account_id="account_id", reason="outside return window"),)),
    )  # fmt: skip


def damaged_shape(topic: str) -> tuple[Step, ...]:
    """Four levels of nesting."""
    exchange = do("exchange_item", order_id="order_id")
    by_payment = If(((is_("payment_method", "card"), (exchange,)),),
                    (exchange,
                     do("add_note", account_id="account_id",
                        reason="gift card order")))  # fmt: skip
    stock = If(((is_("in_stock", True), (by_payment,)),),
               (do("offer_refund", order_id="order_id"),))  # fmt: skip
    delivered = If(((is_("order_status", "delivered"),
                     (do("check_stock", order_id="order_id"), stock)),),
                   (do("reship_order", order_id="order_id"),))  # fmt: skip
    return (ACCOUNT, do("validate_purchase", order_id="order_id"),
            If(((is_("item_damaged", True), (delivered,)),),
               (do("search_policy", topic=topic),)))  # fmt: skip


def access_shape(final: Do) -> tuple[Step, ...]:
    """Selection on the account status, nested on the identity check."""
    return (ACCOUNT, If(((is_("account_status", "locked"), (
        do("verify_identity", account_id="account_id", zip_code="zip_code"),
        If(((is_("identity_verified", True),
             (do("unlock_account", account_id="account_id"), final)),),
           (do("notify_team", account_id="account_id", team="technical"),)))),),
        (final,)))  # fmt: skip


def order_change_shape(final: Do, topic: str) -> tuple[Step, ...]:
    """Selection with three branches; the middle one nests an or-condition."""
    premium = Any_((is_("membership", "gold"), is_("membership", "silver")))
    return (do("shipping_status", order_id="order_id"), If((
        (is_("order_status", "ordered"), (final,)),
        (is_("order_status", "shipped"), (
            ACCOUNT, do("membership_lookup", account_id="account_id"),
            If(((premium, (do("notify_team", account_id="account_id", team="shipping"),)),),
               (do("schedule_callback", account_id="account_id"),)))),
    ), (do("search_policy", topic=topic),)))  # fmt: skip


def shipping_shape(reason: str) -> tuple[Step, ...]:
    """An and-condition, then a nested selection."""
    late = All((is_("order_status", "delivered"), Atom("days_since_purchase", "is more than", 7)))
    return (ACCOUNT, do("validate_purchase", order_id="order_id"), If(
        ((late, (do("notify_manager", account_id="account_id", reason=reason),)),
         (is_("order_status", "delivered"), (
             do("membership_lookup", account_id="account_id"),
             If(((is_("membership", "guest"),
                  (do("notify_team", account_id="account_id", team="shipping"),)),),
                (do("reship_order", order_id="order_id"),))))),
        (do("expedite_shipping", order_id="order_id"),)))  # fmt: skip


def subscription_shape(final: str) -> tuple[Step, ...]:
    """A chain after a selection on an and-condition."""
    lapsed_member = All((is_("subscription", "expired"), Atom("membership", "is not", "guest")))
    return (ACCOUNT, do("subscription_status", account_id="account_id"),
            do("membership_lookup", account_id="account_id"),
            If(((lapsed_member, (do(final, account_id="account_id"),
                                 do("offer_promo_code", account_id="account_id"))),),
               (do("add_note", account_id="account_id", reason=f"asked: {final}"),)))  # fmt: skip


def info_shape(search: str, topic: str) -> tuple[Step, ...]:
    """A single condition that adds an action, then the search every customer gets."""
    return (ACCOUNT, do("membership_lookup", account_id="account_id"),
            If(((is_("membership", "gold"), (do("offer_promo_code", account_id="account_id"),)),)),
            do(search, topic=topic))  # fmt: skip


@dataclass(frozen=True)
class Intent:
    name: str
    title: str
    says: dict[str, str]  # language -> how the customer states the intent
    steps: tuple[Step, ...]


def _i(name: str, title: str, en: str, es: str, fr: str, steps: tuple[Step, ...]) -> Intent:
    return Intent(name, title, {"en": en, "es": es, "fr": fr}, steps)


INTENTS: Final = (
    _i("refund_wrong_size", "Refund for a wrong size",
       "the shoes I bought are the wrong size and I want my money back",
       "los zapatos que compré son de otra talla y quiero que me devuelvan el dinero",
       "les chaussures achetées ne sont pas à ma taille et je veux être remboursé",
       refund_shape("offer_refund", "wrong size", 30)),
    _i("refund_changed_mind", "Refund after a change of mind",
       "I changed my mind about a purchase and want a refund",
       "cambié de opinión sobre una compra y quiero un reembolso",
       "j'ai changé d'avis sur un achat et je voudrais un remboursement",
       refund_shape("offer_refund", "changed mind", 14)),
    _i("refund_duplicate", "Refund for a duplicate order", "I was charged twice for the same order",
       "me cobraron dos veces el mismo pedido", "on m'a facturé deux fois la même commande",
       refund_shape("offer_refund", "duplicate order", 60)),
    _i("exchange_size", "Exchange for another size",
       "I would like to exchange a jacket for another size",
       "quisiera cambiar una chaqueta por otra talla",
       "je voudrais échanger une veste contre une autre taille",
       refund_shape("exchange_item", "size exchange", 30)),
    _i("exchange_color", "Exchange for another colour",
       "I want the same shirt in a different colour",
       "quiero la misma camisa en otro color", "je veux la même chemise dans une autre couleur",
       refund_shape("exchange_item", "colour exchange", 45)),
    _i("return_gift", "Return of a gift", "I received a gift I do not need and want to return it",
       "recibí un regalo que no necesito y quiero devolverlo",
       "j'ai reçu un cadeau dont je n'ai pas besoin et je veux le rendre",
       refund_shape("issue_store_credit", "unwanted gift", 60)),
    _i("return_late", "Return after the usual window",
       "I know it has been a while but I want to return my boots",
       "sé que ha pasado tiempo pero quiero devolver mis botas",
       "je sais que ça fait longtemps mais je veux rendre mes bottes",
       refund_shape("offer_refund", "late return", 90)),
    _i("refund_quality", "Refund for poor quality",
       "the jeans wore out after a week and I want a refund",
       "los vaqueros se gastaron en una semana y quiero un reembolso",
       "le jean s'est usé en une semaine et je veux un remboursement",
       refund_shape("offer_refund", "poor quality", 45)),
    _i("damaged_item", "Damaged item", "my order arrived damaged", "mi pedido llegó dañado",
       "ma commande est arrivée abîmée", damaged_shape("damaged items")),
    _i("broken_on_arrival", "Broken on arrival",
       "the lamp I ordered was broken when I opened the box",
       "la lámpara que pedí estaba rota al abrir la caja",
       "la lampe commandée était cassée à l'ouverture du colis", damaged_shape("breakage")),
    _i("missing_parts", "Missing parts", "some parts of my order are missing",
       "faltan piezas de mi pedido", "il manque des pièces dans ma commande",
       damaged_shape("missing parts")),
    _i("defective_product", "Defective product", "the headphones I got do not work",
       "los auriculares que recibí no funcionan", "le casque que j'ai reçu ne fonctionne pas",
       damaged_shape("defects")),
    _i("reset_password", "Password reset", "I forgot my password", "olvidé mi contraseña",
       "j'ai oublié mon mot de passe", access_shape(do("reset_password", account_id="account_id"))),
    _i("recover_username", "Username recovery", "I cannot remember my username",
       "no recuerdo mi nombre de usuario", "je ne me souviens plus de mon identifiant",
       access_shape(do("send_username", account_id="account_id", email="email"))),
    _i("update_email", "Email change", "I need to change the email on my account",
       "necesito cambiar el correo de mi cuenta", "je dois changer l'adresse e-mail de mon compte",
       access_shape(do("update_email", account_id="account_id", email="email"))),
    _i("suspicious_login", "Suspicious sign-in", "someone else may have signed in to my account",
       "puede que otra persona haya entrado en mi cuenta",
       "quelqu'un d'autre s'est peut-être connecté à mon compte",
       access_shape(do("log_out_everywhere", account_id="account_id"))),
    _i("login_trouble", "Cannot sign in", "I cannot sign in to the website",
       "no puedo iniciar sesión en la web", "je n'arrive pas à me connecter au site",
       access_shape(do("send_troubleshooting_link", account_id="account_id", topic="sign-in"))),
    _i("app_crash", "App keeps crashing", "the app crashes every time I open it",
       "la aplicación se cierra cada vez que la abro", "l'application plante à chaque ouverture",
       access_shape(do("send_troubleshooting_link", account_id="account_id", topic="app crashes"))),
    _i("two_factor", "Two-factor codes", "I am not receiving my two-factor codes",
       "no me llegan los códigos de verificación", "je ne reçois pas mes codes de vérification",
       access_shape(do("send_troubleshooting_link", account_id="account_id", topic="two-factor"))),
    _i("change_address", "Change the delivery address", "I need to change the address on my order",
       "necesito cambiar la dirección de mi pedido", "je dois changer l'adresse de ma commande",
       order_change_shape(do("update_address", order_id="order_id", new_address="new_address"),
                          "address changes")),
    _i("cancel_order", "Cancel an order", "I want to cancel my order", "quiero cancelar mi pedido",
       "je veux annuler ma commande",
       order_change_shape(do("cancel_order", order_id="order_id"), "cancellations")),
    _i("expedite_order", "Faster shipping", "I need my order to arrive sooner",
       "necesito que mi pedido llegue antes", "j'ai besoin que ma commande arrive plus tôt",
       order_change_shape(do("expedite_shipping", order_id="order_id"), "shipping speeds")),
    _i("reroute_gift", "Send an order to someone else",
       "I want my order delivered to a friend instead",
       "quiero que mi pedido se entregue a un amigo", "je veux faire livrer ma commande à un ami",
       order_change_shape(do("update_address", order_id="order_id", new_address="new_address"),
                          "gift deliveries")),
    _i("cancel_gift", "Cancel a gift order", "I want to cancel a gift I ordered",
       "quiero cancelar un regalo que pedí", "je veux annuler un cadeau que j'ai commandé",
       order_change_shape(do("cancel_order", order_id="order_id"), "gift orders")),
    _i("missing_parcel", "Parcel not received", "my parcel says delivered but I never got it",
       "mi paquete figura como entregado pero no lo recibí",
       "mon colis est indiqué livré mais je ne l'ai jamais reçu",
       shipping_shape("parcel not received")),
    _i("late_delivery", "Late delivery", "my order is late", "mi pedido va con retraso",
       "ma commande est en retard", shipping_shape("late delivery")),
    _i("wrong_item_sent", "Wrong item sent", "I received someone else's order",
       "recibí el pedido de otra persona", "j'ai reçu la commande de quelqu'un d'autre",
       shipping_shape("wrong item")),
    _i("parcel_stolen", "Parcel stolen", "I think my parcel was stolen from my doorstep",
       "creo que robaron mi paquete de la puerta",
       "je pense qu'on a volé mon colis devant ma porte",
       shipping_shape("stolen parcel")),
    _i("renew_subscription", "Renew the subscription", "I want to renew my subscription",
       "quiero renovar mi suscripción", "je veux renouveler mon abonnement",
       subscription_shape("renew_subscription")),
    _i("cancel_subscription", "Cancel the subscription", "please cancel my subscription",
       "por favor cancelen mi suscripción", "merci d'annuler mon abonnement",
       subscription_shape("cancel_subscription")),
    _i("subscription_lapsed", "Subscription lapsed", "my subscription stopped working",
       "mi suscripción dejó de funcionar", "mon abonnement ne fonctionne plus",
       subscription_shape("renew_subscription")),
    _i("pause_subscription", "Stop the subscription for now",
       "I do not want my subscription any more",
       "ya no quiero mi suscripción", "je ne veux plus de mon abonnement",
       subscription_shape("cancel_subscription")),
    _i("membership_renewal_price", "Renewal price", "how much does renewing my membership cost",
       "cuánto cuesta renovar mi membresía", "combien coûte le renouvellement de mon adhésion",
       subscription_shape("renew_subscription")),
    _i("shipping_cost", "Shipping costs", "how much does shipping cost", "cuánto cuesta el envío",
       "combien coûte la livraison", info_shape("search_policy", "shipping costs")),
    _i("return_policy", "Return policy", "what is your return policy",
       "cuál es su política de devoluciones", "quelle est votre politique de retour",
       info_shape("search_policy", "returns")),
    _i("price_match", "Price matching", "do you match lower prices from other shops",
       "igualan precios más bajos de otras tiendas",
       "alignez-vous vos prix sur ceux des autres magasins",
       info_shape("search_policy", "price matching")),
    _i("product_materials", "Product materials", "what is this jacket made of",
       "de qué material es esta chaqueta", "en quelle matière est cette veste",
       info_shape("search_product", "materials")),
    _i("product_sizing", "Sizing advice", "which size should I pick for these boots",
       "qué talla debo elegir para estas botas", "quelle taille choisir pour ces bottes",
       info_shape("search_product", "sizing")),
    _i("product_care", "Care instructions", "how do I wash this sweater",
       "cómo lavo este jersey", "comment laver ce pull", info_shape("search_product", "care")),
    _i("store_hours", "Store hours", "when are your stores open",
       "cuándo abren sus tiendas", "quand vos magasins sont-ils ouverts",
       info_shape("search_faq", "store hours")),
    _i("payment_options", "Payment options", "which payment methods do you accept",
       "qué métodos de pago aceptan", "quels moyens de paiement acceptez-vous",
       info_shape("search_faq", "payment methods")),
    _i("loyalty_points", "Loyalty points", "how do my loyalty points work",
       "cómo funcionan mis puntos de fidelidad", "comment fonctionnent mes points de fidélité",
       info_shape("search_faq", "loyalty points")),
)
BY_NAME: Final = {intent.name: intent for intent in INTENTS}
