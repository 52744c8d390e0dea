"""The ten scenarios' wording: five wide (LRS) and five deep (HRS). Only words live here; the
graphs are built by :mod:`.shapes`, so every scenario of a shape has the same structure and its
own vocabulary."""

from __future__ import annotations

from sopgym.domains.maze.shapes import Deep, Need, Scenario, Split, deep, wide
from sopgym.domains.maze.speech import DaysAgo, Quotes


def _needs(items: list[tuple[str, str, str]], sarcasm: dict[str, str]) -> list[Need]:
    """(value, what the customer wants, what the agent does) -> needs with the customer's two
    ways of asking for it."""
    return [
        Need(
            value,
            f"Handle: {wants}",
            does,
            (f"I'd like to {wants}.", f"I'm calling because I need to {wants}."),
            sarcasm.get(value),
        )
        for value, wants, does in items
    ]


def _wide_telecom() -> Scenario:
    needs = _needs(
        [
            (
                "upgrade",
                "upgrade my phone",
                "I can help with an upgrade: let me show the devices your plan allows.",
            ),
            (
                "roaming",
                "turn on roaming for a trip",
                "I'll add a roaming pass to your line before you travel.",
            ),
            (
                "bill",
                "dispute a charge on my bill",
                "Let me open a billing review for that charge.",
            ),
            ("sim", "replace a lost SIM card", "I'll block the old SIM and send a replacement."),
            (
                "port",
                "move my number to another carrier",
                "I'll give you the transfer code for your number.",
            ),
            (
                "plan",
                "change to a cheaper plan",
                "Let me compare the plans and find a lower monthly price.",
            ),
            ("data", "buy extra data", "I'll add a data top-up to this month."),
            (
                "outage",
                "report no signal at home",
                "I'll check the network status at your address.",
            ),
            (
                "cancel",
                "cancel my contract",
                "Let me check the early-termination terms for your contract.",
            ),
            (
                "address",
                "update my billing address",
                "I'll update the billing address on the account.",
            ),
            ("family", "add a line for my kid", "I'll add a new line to your family plan."),
            ("voicemail", "reset my voicemail PIN", "I'll send a new voicemail PIN to your phone."),
        ],
        {"outage": "Oh brilliant, zero bars at home again, what a fantastic network you run."},
    )
    return wide(
        "telecom_requests",
        "Mobile carrier: customer requests",
        "Route each mobile customer's request to the right handling step.",
        "Thanks for contacting us! What can I do for you today?",
        needs,
        [
            Split(
                "cancel",
                DaysAgo("contract_days", "I signed the contract on {date}."),
                "days since the contract was signed",
                14,
                (
                    "Cancel within the cooling-off period",
                    "You are within the cooling-off period, so I'll cancel without a fee.",
                ),
                (
                    "Cancel with an early-termination fee",
                    "The cooling-off period has passed, so cancelling now carries the exit fee.",
                ),
            ),
            Split(
                "upgrade",
                Quotes("quoted_price", "Other shops quoted me {quotes} for the new model."),
                "the median of the prices the customer was quoted",
                600,
                ("Offer the standard upgrade", "I'll offer you our standard upgrade price."),
                (
                    "Offer the price match",
                    "Those quotes are high; I'll apply our premium price match instead.",
                ),
            ),
        ],
        (
            "outage",
            "Apologise and credit the outage",
            "I'm sorry for the long wait; I'll check your signal and add a courtesy credit.",
        ),
    )


def _wide_bank_cards() -> Scenario:
    needs = _needs(
        [
            ("lost", "block a lost card", "I'll block the card right away and order a new one."),
            ("limit", "raise my card limit", "Let me review a higher limit for your card."),
            ("pin", "get a new card PIN", "I'll send a PIN reminder by post."),
            ("fraud", "report a payment I didn't make", "I'll open a fraud case for that payment."),
            (
                "travel",
                "tell you I'm travelling abroad",
                "I'll note your travel dates so the card works abroad.",
            ),
            ("statement", "get a copy of my statement", "I'll email you the statement copy."),
            (
                "contactless",
                "switch off contactless payments",
                "I'll turn contactless off on your card.",
            ),
            ("fee", "ask about an annual fee", "Let me look at the annual fee on your card."),
            (
                "upgrade_card",
                "move to a premium card",
                "I'll check whether you qualify for the premium card.",
            ),
            ("close", "close my credit card", "Let me prepare the card closure."),
            (
                "autopay",
                "set up automatic repayments",
                "I'll set up the automatic repayment for you.",
            ),
            (
                "points",
                "redeem my reward points",
                "I'll open the rewards catalogue for your points.",
            ),
        ],
        {"fraud": "Oh lovely, apparently I bought a jet ski yesterday. Very generous of me."},
    )
    return wide(
        "bank_cards",
        "Retail bank: card services",
        "Take each card customer's request to the right handling step.",
        "Welcome to card services. How can I help?",
        needs,
        [
            Split(
                "fee",
                DaysAgo("fee_days", "The fee was charged on {date}."),
                "days since the fee was charged",
                30,
                (
                    "Refund the fee",
                    "The fee was charged within the last 30 days, so I'll refund it.",
                ),
                ("Explain the fee", "That fee is older than 30 days; I'll explain what it covers."),
            ),
            Split(
                "limit",
                Quotes("spend", "My last few months came to {quotes} on the card."),
                "the median monthly spend the customer quotes",
                2000,
                ("Offer a small limit increase", "I'll offer a modest limit increase."),
                (
                    "Refer to credit review",
                    "With that spend I'll refer you to a full credit review.",
                ),
            ),
        ],
        (
            "fraud",
            "Apologise and fast-track the fraud case",
            "I'm sorry you had to wait; I'll fast-track this fraud case now.",
        ),
    )


def _wide_returns() -> Scenario:
    needs = _needs(
        [
            ("return", "return an item", "I'll start a return for the item."),
            (
                "exchange",
                "exchange for another size",
                "I'll set up an exchange for the other size.",
            ),
            ("late", "chase a late parcel", "Let me track the parcel with the courier."),
            (
                "damaged",
                "report a damaged item",
                "I'll record the damage and arrange a replacement.",
            ),
            (
                "wrong_item",
                "report that I got the wrong item",
                "I'll send the right item and a return label.",
            ),
            ("invoice", "get an invoice for my order", "I'll email the invoice."),
            (
                "address_change",
                "change the delivery address",
                "I'll update the delivery address if the parcel hasn't left.",
            ),
            ("cancel_order", "cancel an order", "I'll cancel the order before it ships."),
            ("gift", "add gift wrapping", "I'll add gift wrapping to the order."),
            ("price_drop", "claim a price drop", "Let me check the price adjustment."),
            ("voucher", "use a voucher that failed", "I'll apply the voucher by hand."),
            ("account", "delete my shop account", "I'll start the account deletion."),
        ],
        {"damaged": "Oh perfect, the vase arrived in twelve pieces. Exactly how I wanted it."},
    )
    return wide(
        "shop_returns",
        "Online shop: orders and returns",
        "Take each shopper's request to the right handling step.",
        "Hi, you've reached the shop's help desk. What do you need?",
        needs,
        [
            Split(
                "return",
                DaysAgo("delivered_days", "It was delivered on {date}."),
                "days since delivery",
                30,
                (
                    "Accept the return",
                    "It's within 30 days of delivery, so I'll accept the return.",
                ),
                (
                    "Decline the return",
                    "It's more than 30 days since delivery, so the return window has closed.",
                ),
            ),
            Split(
                "price_drop",
                Quotes("prices_seen", "I've seen it for {quotes} since I bought it."),
                "the median price the customer has seen since buying",
                80,
                ("Refund the difference", "I'll refund the difference to the current price."),
                (
                    "Decline the adjustment",
                    "Those prices aren't below what you paid, so there's no adjustment.",
                ),
            ),
        ],
        (
            "late",
            "Apologise and upgrade the delivery",
            "Sorry for the wait; I'll track the parcel and upgrade the delivery for free.",
        ),
    )


def _wide_travel() -> Scenario:
    needs = _needs(
        [
            ("rebook", "change my flight date", "I'll look for another date on the same route."),
            ("seat", "choose a seat", "I'll open the seat map for your booking."),
            ("bag", "add a checked bag", "I'll add a checked bag to the booking."),
            ("name", "correct the name on my ticket", "I'll correct the spelling on the ticket."),
            (
                "refund",
                "get a refund for a cancelled flight",
                "Let me check the refund for the cancelled flight.",
            ),
            ("meal", "order a special meal", "I'll add the special meal request."),
            ("assist", "book wheelchair assistance", "I'll book assistance at both airports."),
            ("pet", "bring my dog on board", "Let me check the pet rules for the aircraft."),
            (
                "delay",
                "claim compensation for a delay",
                "Let me check the delay against the compensation rules.",
            ),
            ("lost_bag", "report a missing suitcase", "I'll open a missing-baggage report."),
            ("upgrade_cabin", "upgrade to business class", "I'll check upgrade availability."),
            ("invoice_trip", "get a receipt for my trip", "I'll email the receipt."),
        ],
        {"lost_bag": "Oh great, my suitcase is on holiday somewhere without me. Wonderful."},
    )
    return wide(
        "travel_changes",
        "Airline: booking changes",
        "Take each traveller's request to the right handling step.",
        "Hello and thank you for calling the airline. What can I do for you?",
        needs,
        [
            Split(
                "delay",
                DaysAgo("flight_days", "The flight was on {date}."),
                "days since the delayed flight",
                60,
                (
                    "Open a compensation claim",
                    "It's within 60 days of the flight, so I'll open the compensation claim.",
                ),
                (
                    "Decline the late claim",
                    "Claims must come within 60 days of the flight, so I can't open one.",
                ),
            ),
            Split(
                "rebook",
                Quotes("fares", "The other dates I found cost {quotes}."),
                "the median fare of the other dates",
                300,
                (
                    "Rebook with a fare difference",
                    "I'll rebook you and charge the fare difference.",
                ),
                (
                    "Offer a travel voucher instead",
                    "Those fares are high; I'll offer a travel voucher instead.",
                ),
            ),
        ],
        (
            "lost_bag",
            "Apologise and prioritise the baggage search",
            "Sorry for the wait; I'll open the report and prioritise the search.",
        ),
    )


def _wide_utility() -> Scenario:
    needs = _needs(
        [
            ("move_in", "start service at a new home", "I'll set up service at the new address."),
            ("move_out", "stop service when I move out", "I'll schedule the final meter reading."),
            ("meter", "submit a meter reading", "I'll record the meter reading."),
            ("high_bill", "question a high bill", "Let me review the bill against your usage."),
            ("payment_plan", "spread a bill over months", "Let me set up a payment plan."),
            ("outage_power", "report a power cut", "I'll check for outages in your area."),
            ("tariff", "switch to a green tariff", "I'll switch you to the green tariff."),
            (
                "smart_meter",
                "book a smart meter install",
                "I'll book the smart-meter installation.",
            ),
            ("direct_debit", "change my direct debit", "I'll update the direct debit."),
            (
                "priority",
                "join the priority services register",
                "I'll add you to the priority register.",
            ),
            ("solar", "register my solar panels", "I'll register the panels for export payments."),
            ("complaint", "make a formal complaint", "I'll log a formal complaint."),
        ],
        {"outage_power": "Oh wonderful, candlelit dinner again, thanks to you lot."},
    )
    return wide(
        "utility_services",
        "Energy supplier: account services",
        "Take each energy customer's request to the right handling step.",
        "Good day, energy customer services here. What can I help with?",
        needs,
        [
            Split(
                "high_bill",
                Quotes("usage", "My last bills were {quotes}."),
                "the median of the customer's recent bills",
                150,
                ("Explain the usage", "Your recent bills are normal; I'll walk through the usage."),
                (
                    "Send a meter engineer",
                    "Those bills are unusually high; I'll send an engineer to check the meter.",
                ),
            ),
            Split(
                "meter",
                DaysAgo("reading_days", "I read the meter on {date}."),
                "days since the meter was read",
                7,
                ("Accept the reading", "A reading from the last week is fine; I'll record it."),
                (
                    "Ask for a fresh reading",
                    "That reading is more than a week old; please take a fresh one.",
                ),
            ),
        ],
        (
            "outage_power",
            "Apologise and escalate the power cut",
            "Sorry you waited so long; I'll escalate the power cut to the network team.",
        ),
    )


_FIXED_SCRIPTS = {
    "1": "Hello, thanks for reaching out. What is this about?",
    "3": "I've sent you a one-time code; please tell me the code.",
    "4": "I'm sorry you had to wait so long for us. Is it alright to continue?",
    "7": "We don't have it yet; could you send it once more?",
    "11": "I'm passing this to a specialist who will contact you within one working day.",
    "12": "That's handled by another team; I'll transfer you now.",
}


def _deep(
    name: str,
    title: str,
    objective: str,
    noun: str,
    event: DaysAgo,
    window: int,
    document: str,
    options: list[tuple[str, str, str, tuple[str, ...]]],
    request: tuple[str, ...],
    id_noun: str,
) -> Scenario:
    scripts = {
        **_FIXED_SCRIPTS,
        "2": f"To find your account, please give me {id_noun}.",
        "5": f"When did the {noun} happen?",
        "6": f"Let me check that we have the {document}.",
        "8": "Which of the options would you prefer?",
        "10": f"I'm sorry, the {noun} is outside our {window}-day window, so we can't proceed.",
    }
    return deep(
        Deep(
            name,
            title,
            objective,
            request,
            (
                "Actually I just wanted your opening hours.",
                "I have a question about something else entirely.",
            ),
            id_noun,
            event,
            window,
            document,
            options,
            scripts,
        )
    )


def _deep_all() -> list[Scenario]:
    return [
        _deep(
            "insurance_claim",
            "Home insurance: claims",
            "Take a home-insurance claim through every prerequisite to a resolution.",
            "damage",
            DaysAgo("damage_days", "The damage happened on {date}."),
            90,
            "photos of the damage",
            [
                (
                    "repair",
                    "Arrange a repair",
                    "I'll send an approved contractor to repair it.",
                    ("I'd like it repaired.", "Please send someone to fix it."),
                ),
                (
                    "payout",
                    "Pay the claim",
                    "I'll pay the claim amount to your bank account.",
                    ("Just pay me the money.", "I'd prefer a cash settlement."),
                ),
                (
                    "replace",
                    "Replace the items",
                    "I'll order like-for-like replacements.",
                    ("Please replace the items.", "Replacements would be best."),
                ),
            ],
            (
                "I need to make a claim on my home insurance.",
                "Water came through the ceiling and I want to claim.",
            ),
            "your policy number",
        ),
        _deep(
            "device_repair",
            "Electronics: warranty repairs",
            "Take a warranty repair through every check to a resolution.",
            "fault",
            DaysAgo("purchase_days", "I bought it on {date}."),
            365,
            "proof of purchase",
            [
                (
                    "mail_in",
                    "Arrange a mail-in repair",
                    "I'll email a prepaid label for the mail-in repair.",
                    ("I'll post it to you.", "Mail-in is fine."),
                ),
                (
                    "store",
                    "Book a store repair",
                    "I'll book a repair slot at your nearest store.",
                    ("I'll bring it to a store.", "A store appointment please."),
                ),
                (
                    "swap",
                    "Send a replacement unit",
                    "I'll ship a replacement unit.",
                    ("Can you just swap it?", "A replacement unit would be great."),
                ),
            ],
            (
                "My laptop stopped charging and it's under warranty.",
                "My headphones broke and I want a warranty repair.",
            ),
            "the serial number",
        ),
        _deep(
            "loan_payment_holiday",
            "Consumer loans: payment holidays",
            "Take a payment-holiday request through every check to a decision.",
            "income loss",
            DaysAgo("loss_days", "I lost my income on {date}."),
            60,
            "letter from the employer",
            [
                (
                    "one_month",
                    "Grant a one-month holiday",
                    "I'll pause one monthly payment.",
                    ("One month off would help.", "Just pause one payment."),
                ),
                (
                    "three_months",
                    "Grant a three-month holiday",
                    "I'll pause three monthly payments.",
                    ("I need three months.", "Could you pause it for three months?"),
                ),
                (
                    "reduce",
                    "Reduce the payments",
                    "I'll lower the monthly payment for six months.",
                    ("Lower payments would be better.", "Can I pay less each month instead?"),
                ),
            ],
            (
                "I can't make my loan payments at the moment.",
                "I'd like a payment holiday on my loan.",
            ),
            "your loan reference",
        ),
        _deep(
            "account_recovery",
            "Online service: account recovery",
            "Take a locked-out user through every check to recovered access.",
            "lockout",
            DaysAgo("lockout_days", "I got locked out on {date}."),
            30,
            "photo ID",
            [
                (
                    "email_reset",
                    "Reset by email",
                    "I'll send a reset link to your email.",
                    ("Send it to my email.", "Email works for me."),
                ),
                (
                    "sms_reset",
                    "Reset by text message",
                    "I'll text you a reset link.",
                    ("Text it to me.", "SMS please."),
                ),
                (
                    "new_2fa",
                    "Re-enrol two-factor login",
                    "I'll reset your two-factor login so you can enrol again.",
                    ("I lost my authenticator, reset it.", "I need new two-factor."),
                ),
            ],
            ("I'm locked out of my account.", "I can't log in to my account any more."),
            "the email address on the account",
        ),
        _deep(
            "membership_cancel",
            "Gym: membership cancellation",
            "Take a cancellation request through every check to the agreed outcome.",
            "injury",
            DaysAgo("injury_days", "I got injured on {date}."),
            45,
            "doctor's note",
            [
                (
                    "freeze",
                    "Freeze the membership",
                    "I'll freeze your membership until you recover.",
                    ("Freezing it sounds good.", "Please freeze it."),
                ),
                (
                    "cancel_free",
                    "Cancel without a fee",
                    "I'll cancel with no exit fee.",
                    ("Just cancel it.", "Cancel it please, no fee."),
                ),
                (
                    "downgrade",
                    "Move to the off-peak plan",
                    "I'll move you to the cheaper off-peak plan.",
                    ("The off-peak plan is fine.", "Downgrade me instead."),
                ),
            ],
            (
                "I need to cancel my gym membership because of an injury.",
                "I got hurt and want out of my membership.",
            ),
            "your membership number",
        ),
    ]


SCENARIOS: dict[str, Scenario] = {
    s.graph.name: s
    for s in [
        _wide_telecom(),
        _wide_bank_cards(),
        _wide_returns(),
        _wide_travel(),
        _wide_utility(),
        *_deep_all(),
    ]
}
