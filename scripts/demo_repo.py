"""Generated file bodies of the fictional "ledgerline" repository (see demo_sources.py).

Templates filled from fixed vocabularies with a seeded ``random.Random``: long enough
to make realistic file reads, never meant to run.
"""

from __future__ import annotations

import random

_PROVIDERS = ["northwind", "paylane", "kestrel", "orbit", "meridian", "tallis"]
_GW_OPS = ["capture", "refund", "void", "status", "error_mapping", "retry_on_502"]
_MODEL_TESTS = [
    "money_addition_same_currency", "money_addition_mixed_currency_raises", "money_of_parses",
    "money_str", "money_ordering", "payment_captured_amount_sums_settled",
    "payment_captured_amount_ignores_failed", "payment_authorized_amount", "refund_pending",
    "refund_settled", "capture_status_transitions", "payment_status_transitions",
    "dispute_opened_blocks_refunds", "payout_totals", "merchant_defaults",
    "customer_masked_email", "refund_request_validation", "metadata_is_copied",
    "payment_currency", "settlement_batch_ids",
]  # fmt: skip
_STEPS = [
    "collect_captures", "collect_refunds", "net_by_merchant", "apply_fees", "apply_reserves",
    "convert_currency", "round_minor_units", "hold_disputed", "split_payouts",
    "schedule_payouts", "write_ledger_entries", "reconcile_gateway_report",
    "flag_mismatches", "close_batch",
]  # fmt: skip
_REPORT_TESTS = [
    "daily_refund_totals", "daily_capture_totals", "refund_ratio_by_merchant",
    "empty_day_has_zero_totals", "report_rounds_to_minor_units", "report_skips_failed_refunds",
    "csv_export_columns", "csv_export_escapes_commas", "weekly_rollup", "timezone_boundaries",
]  # fmt: skip
_API_TESTS = [
    "create_refund_201", "create_refund_unknown_payment_404", "create_refund_not_allowed_409",
    "create_refund_validates_amount_400", "list_refunds", "get_refund", "get_refund_404",
    "idempotency_key_replays", "idempotency_key_conflict_409", "auth_required_401",
    "refund_over_limit_is_422", "error_body_names_the_limit",
]  # fmt: skip

_RULES = [
    ("chargeback_window", "the payment is older than the chargeback window",
     "request.requested_at - payment.created_at > CHARGEBACK_WINDOW"),
    ("dispute_open", "a dispute is open on the payment", "payment.has_open_dispute"),
    ("merchant_paused", "refunds are paused for the merchant",
     'payment.metadata.get("merchant_refunds_paused") == "true"'),
    ("fraud_hold", "the payment is on a fraud hold", 'payment.metadata.get("risk_hold") == "1"'),
    ("duplicate_request", "an identical refund was requested in the last minute",
     "any(r.amount == request.amount and r.is_recent(request.requested_at) "
     "for r in payment.refunds)"),
    ("settlement_cutoff", "the capture has not settled yet",
     "not any(c.is_settled for c in payment.captures)"),
    ("currency_precision", "the amount has more decimals than the currency allows",
     "request.amount.amount != quantize(request.amount.amount, payment.currency)"),
    ("region_block", "refunds to this region require manual review",
     'payment.metadata.get("card_country") in {"KP", "IR", "SY"}'),
    ("card_expired", "the card expired and the gateway does not support it",
     'payment.metadata.get("card_expired") == "true" and not payment.gateway_supports_expired'),
    ("partner_override", "the partner handles refunds for this merchant",
     'payment.metadata.get("partner_refunds") == "external"'),
    ("max_refund_count", "the payment already has too many refunds", "len(payment.refunds) >= 20"),
    ("test_mode_mismatch", "a live refund on a test-mode payment",
     'payment.metadata.get("livemode") == "false"'),
    ("closed_merchant", "the merchant account is closed",
     'payment.metadata.get("merchant_status") == "closed"'),
    ("payout_reversed", "the payout of this payment was reversed",
     'payment.metadata.get("payout_reversed") == "true"'),
    ("voided_authorization", "the authorization was voided",
     "payment.status is PaymentStatus.VOIDED"),
    ("pending_capture", "a capture is still pending at the gateway",
     "any(c.status.value == \"pending\" for c in payment.captures)"),
    ("refund_reason_required", "large refunds need an explicit reason",
     'request.amount.amount > Decimal("1000") and request.reason == "requested_by_customer"'),
    ("instalment_plan", "instalment payments are refunded by the lender",
     'payment.metadata.get("instalments", "1") != "1"'),
    ("gift_card_tender", "gift card tenders cannot be refunded to a card",
     'payment.metadata.get("tender") == "gift_card"'),
    ("cross_border_fx", "the FX rate of a cross-border payment expired",
     'payment.metadata.get("fx_quote_expired") == "true"'),
]  # fmt: skip

_CURRENCIES = [
    ("EUR", 2, "Euro"), ("USD", 2, "US Dollar"), ("GBP", 2, "Pound Sterling"),
    ("JPY", 0, "Yen"), ("CHF", 2, "Swiss Franc"), ("SEK", 2, "Swedish Krona"),
    ("NOK", 2, "Norwegian Krone"), ("DKK", 2, "Danish Krone"), ("PLN", 2, "Zloty"),
    ("CZK", 2, "Czech Koruna"), ("HUF", 2, "Forint"), ("KWD", 3, "Kuwaiti Dinar"),
    ("BHD", 3, "Bahraini Dinar"), ("JOD", 3, "Jordanian Dinar"), ("OMR", 3, "Rial Omani"),
    ("TND", 3, "Tunisian Dinar"), ("KRW", 0, "Won"), ("VND", 0, "Dong"), ("CLP", 0, "Chilean Peso"),
    ("ISK", 0, "Iceland Krona"), ("AUD", 2, "Australian Dollar"), ("CAD", 2, "Canadian Dollar"),
    ("NZD", 2, "New Zealand Dollar"), ("SGD", 2, "Singapore Dollar"),
    ("HKD", 2, "Hong Kong Dollar"),
    ("MXN", 2, "Mexican Peso"), ("BRL", 2, "Brazilian Real"), ("ZAR", 2, "Rand"),
    ("INR", 2, "Indian Rupee"), ("TRY", 2, "Turkish Lira"), ("AED", 2, "UAE Dirham"),
    ("SAR", 2, "Saudi Riyal"), ("ILS", 2, "New Israeli Sheqel"), ("THB", 2, "Baht"),
    ("MYR", 2, "Malaysian Ringgit"), ("PHP", 2, "Philippine Peso"), ("IDR", 2, "Rupiah"),
    ("RON", 2, "Romanian Leu"), ("BGN", 2, "Bulgarian Lev"), ("UGX", 0, "Uganda Shilling"),
]  # fmt: skip

_ENTITY_FIELDS = {
    "Customer": [("id", "str"), ("email", "str"), ("name", "str"), ("country", "str"),
                 ("created_at", "datetime"), ("default_currency", "str"),
                 ("metadata", "dict[str, str]")],
    "Merchant": [("id", "str"), ("legal_name", "str"), ("country", "str"),
                 ("settlement_currency", "str"), ("payout_schedule", "str"),
                 ("reserve_ratio", "Decimal"), ("refunds_enabled", "bool")],
    "Dispute": [("id", "str"), ("payment_id", "str"), ("amount", "Money"), ("reason", "str"),
                ("opened_at", "datetime"), ("status", "str"), ("evidence_due", "datetime | None")],
    "Payout": [("id", "str"), ("merchant_id", "str"), ("amount", "Money"),
               ("scheduled_for", "date"), ("batch_id", "str"), ("status", "str")],
    "SettlementBatch": [("id", "str"), ("day", "date"), ("currency", "str"),
                        ("captures", "list[str]"), ("refunds", "list[str]"),
                        ("closed", "bool"), ("gateway_report", "str | None")],
}  # fmt: skip


def _rules(rng: random.Random) -> str:
    blocks = []
    for name, message, condition in _RULES:
        ticket = rng.randrange(1000, 1400)
        blocks.append(
            f"\n\ndef _check_{name}(payment: Payment, request: RefundRequest, now: datetime) "
            f"-> RuleResult:\n"
            f'    """Deny when {message}.\n\n    Introduced for PAY-{ticket}; the code is shown '
            f'to support agents.\n    """\n'
            f"    if {condition}:\n"
            f'        return RuleResult.deny("{name}", "{message[0].upper() + message[1:]}")\n'
            f"    return RuleResult.allow()"
        )
    names = ",\n".join(f"    _check_{name}" for name, _, _ in _RULES)
    return (
        "".join(blocks)
        + "\n\n\nRULES: tuple[Callable[[Payment, RefundRequest, datetime], RuleResult], ...] = (\n"
        + names
        + ",\n)\n"
    )


def _entity(name: str, fields: list[tuple[str, str]]) -> str:
    lines = [f"\n\n@dataclass\nclass {name}:", f'    """A {name} as stored by ledgerline."""', ""]
    lines += [f"    {field}: {kind}" for field, kind in fields]
    lines += ["", "    def to_dict(self) -> dict[str, object]:", "        return {"]
    lines += [f'            "{field}": _plain(self.{field}),' for field, _ in fields]
    lines += ["        }"]
    return "\n".join(lines)


def _models() -> str:
    entities = "".join(_entity(n, f) for n, f in _ENTITY_FIELDS.items())
    return _MODELS_HEAD + entities + "\n"


_MODELS_HEAD = '''"""Domain model: money, payments, captures and refunds."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from functools import total_ordering

from .currency import quantize


@total_ordering
@dataclass(frozen=True)
class Money:
    """An amount in one currency; arithmetic across currencies is an error."""

    amount: Decimal
    currency: str

    @classmethod
    def of(cls, value: str, currency: str) -> Money:
        return cls(quantize(Decimal(value), currency), currency)

    def _same(self, other: Money) -> None:
        if self.currency != other.currency:
            raise ValueError(f"currency mismatch: {self.currency} vs {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._same(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same(other)
        return Money(self.amount - other.amount, self.currency)

    def __lt__(self, other: Money) -> bool:
        self._same(other)
        return self.amount < other.amount

    def __str__(self) -> str:
        return f"{self.amount} {self.currency}"


class PaymentStatus(enum.Enum):
    AUTHORIZED = "authorized"
    CAPTURED = "captured"
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"
    VOIDED = "voided"
    FAILED = "failed"


class CaptureStatus(enum.Enum):
    PENDING = "pending"
    SETTLED = "settled"
    FAILED = "failed"


class RefundStatus(enum.Enum):
    PENDING = "pending"
    SETTLED = "settled"
    FAILED = "failed"


@dataclass
class Capture:
    id: str
    amount: Money
    status: CaptureStatus = CaptureStatus.PENDING
    captured_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def is_settled(self) -> bool:
        return self.status is CaptureStatus.SETTLED


@dataclass
class Refund:
    id: str
    payment_id: str
    amount: Money
    status: RefundStatus = RefundStatus.PENDING
    reason: str = "requested_by_customer"
    gateway_reference: str | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    @classmethod
    def pending(
        cls, payment_id: str, amount: Money, reason: str, reference: str, *, created_at: datetime
    ) -> Refund:
        return cls(f"re_{uuid.uuid4().hex[:12]}", payment_id, amount, RefundStatus.PENDING,
                   reason, reference, created_at)

    @classmethod
    def settled(cls, refund_id: str, payment_id: str, amount: Money) -> Refund:
        return cls(refund_id, payment_id, amount, RefundStatus.SETTLED)

    def is_recent(self, now: datetime, window: timedelta = timedelta(minutes=1)) -> bool:
        return now - self.created_at < window


@dataclass(frozen=True)
class RefundRequest:
    payment_id: str
    amount: Money
    reason: str
    requested_at: datetime


@dataclass
class Payment:
    """An authorized payment with its captures (split shipments) and refunds."""

    id: str
    amount: Money
    merchant_id: str
    status: PaymentStatus = PaymentStatus.AUTHORIZED
    gateway_reference: str = ""
    captures: list[Capture] = field(default_factory=list)
    refunds: list[Refund] = field(default_factory=list)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    metadata: dict[str, str] = field(default_factory=dict)
    has_open_dispute: bool = False
    gateway_supports_expired: bool = True

    @classmethod
    def authorized(cls, payment_id: str, amount: Money, *, merchant_id: str) -> Payment:
        return cls(payment_id, amount, merchant_id, gateway_reference=f"gw_{payment_id}")

    @property
    def currency(self) -> str:
        return self.amount.currency

    @property
    def authorized_amount(self) -> Decimal:
        return self.amount.amount

    @property
    def captured_amount(self) -> Decimal:
        """Sum of settled captures; failed and pending captures are not money we hold."""
        return sum((c.amount.amount for c in self.captures if c.is_settled), Decimal("0"))


def _plain(value: object) -> object:
    if isinstance(value, Money):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value'''


def _gateway(rng: random.Random) -> str:
    codes = ["card_declined", "insufficient_funds", "expired_card", "processing_error",
             "rate_limited", "invalid_amount", "already_refunded", "charge_disputed",
             "not_found", "currency_unsupported", "timeout", "duplicate"]  # fmt: skip
    parts = [_GATEWAY_HEAD]
    for provider in _PROVIDERS:
        cls = provider.capitalize() + "Gateway"
        mapping = "\n".join(
            f'        "{provider[:2].upper()}-{rng.randrange(100, 999)}": "{code}",'
            for code in rng.sample(codes, 9)
        )
        retries = rng.choice([2, 3, 4])
        parts.append(
            _ADAPTER.format(
                cls=cls,
                provider=provider,
                mapping=mapping,
                retries=retries,
                version=f"{rng.randrange(1, 4)}.{rng.randrange(0, 9)}",
            )
        )
    return "".join(parts)


_GATEWAY_HEAD = '''"""Payment gateway adapters, one class per provider behind GatewayClient."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import httpx

from .errors import GatewayError
from .models import Money

log = logging.getLogger(__name__)


class GatewayClient(Protocol):
    def capture(self, reference: str, amount: Money) -> str: ...
    def refund(self, reference: str, amount: Money, *, reason: str) -> str: ...
    def void(self, reference: str) -> None: ...
    def status(self, reference: str) -> str: ...


class _HttpGateway:
    """Shared HTTP plumbing: auth header, retries on 502/503, error mapping."""

    base_url = ""
    error_map: dict[str, str] = {}
    max_retries = 2

    def __init__(self, api_key: str, *, timeout: float = 10.0) -> None:
        self._client = httpx.Client(
            base_url=self.base_url, timeout=timeout, headers={"Authorization": f"Bearer {api_key}"}
        )

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            response = self._client.post(path, json=payload)
            if response.status_code in (502, 503) and attempt < self.max_retries:
                time.sleep(0.2 * 2**attempt)
                continue
            body: dict[str, Any] = response.json()
            if response.is_error:
                code = self.error_map.get(str(body.get("code")), "processing_error")
                raise GatewayError(code, body.get("message", response.reason_phrase))
            return body
        raise GatewayError("unavailable", f"{self.base_url}{path} kept failing")
'''

_ADAPTER = '''

class {cls}(_HttpGateway):
    """Adapter for the {provider} API v{version}."""

    base_url = "https://api.{provider}.example/v{version}"
    max_retries = {retries}
    error_map = {{
{mapping}
    }}

    def capture(self, reference: str, amount: Money) -> str:
        body = self._post(f"/payments/{{reference}}/capture", _amount(amount))
        return str(body["capture_id"])

    def refund(self, reference: str, amount: Money, *, reason: str) -> str:
        payload = {{**_amount(amount), "reason": reason}}
        body = self._post(f"/payments/{{reference}}/refunds", payload)
        log.debug("{provider} refund %s accepted for %s", body.get("id"), reference)
        return str(body["id"])

    def void(self, reference: str) -> None:
        self._post(f"/payments/{{reference}}/void", {{}})

    def status(self, reference: str) -> str:
        return str(self._client.get(f"/payments/{{reference}}").json()["status"])
'''


def _settlement(rng: random.Random) -> str:
    parts = [
        '"""Daily settlement: from captures and refunds to merchant payouts."""\n\n'
        "from __future__ import annotations\n\nfrom collections import defaultdict\n"
        "from dataclasses import dataclass, field\nfrom decimal import Decimal\n\n"
        "from .currency import quantize\nfrom .models import Money, Payment, SettlementBatch\n\n\n"
        "@dataclass\nclass BatchState:\n    batch: SettlementBatch\n"
        "    totals: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))\n"
        "    notes: list[str] = field(default_factory=list)\n"
    ]
    for step in _STEPS:
        words = step.replace("_", " ")
        key = rng.choice(["merchant_id", "currency", "id"])
        parts.append(
            f"\n\ndef {step}(state: BatchState, payments: list[Payment]) -> BatchState:\n"
            f'    """Settlement step: {words}.\n\n'
            f"    Runs after the previous step in :data:`PIPELINE`; must be idempotent because a\n"
            f'    failed batch is re-run from the start.\n    """\n'
            f"    for payment in payments:\n"
            f"        key = payment.{key}\n"
            f"        net = payment.captured_amount - sum(\n"
            f'            (r.amount.amount for r in payment.refunds), Decimal("0")\n'
            f"        )\n"
            f"        state.totals[key] += quantize(net, payment.currency)\n"
            f'    state.notes.append("{step}: %d payments" % len(payments))\n'
            f"    return state\n"
        )
    parts.append("\n\nPIPELINE = (\n" + "".join(f"    {s},\n" for s in _STEPS) + ")\n")
    parts.append(
        "\n\ndef settle(batch: SettlementBatch, payments: list[Payment]) -> BatchState:\n"
        "    state = BatchState(batch)\n    for step in PIPELINE:\n"
        "        state = step(state, payments)\n    return state\n"
    )
    return "".join(parts)


def _currency() -> str:
    rows = "\n".join(f'    "{c}": ({e}, "{n}"),' for c, e, n in _CURRENCIES)
    return (
        '"""ISO 4217 minor units and rounding."""\n\nfrom __future__ import annotations\n\n'
        "from decimal import ROUND_HALF_EVEN, Decimal\n\n"
        f"CURRENCIES: dict[str, tuple[int, str]] = {{\n{rows}\n}}\n\n\n"
        "def exponent(currency: str) -> int:\n    try:\n        return CURRENCIES[currency][0]\n"
        "    except KeyError:\n"
        '        raise ValueError(f"unsupported currency {currency!r}") from None\n\n\n'
        "def quantize(amount: Decimal, currency: str) -> Decimal:\n"
        "    return amount.quantize(Decimal(1).scaleb(-exponent(currency)), ROUND_HALF_EVEN)\n\n\n"
        "def to_minor(amount: Decimal, currency: str) -> int:\n"
        "    return int(quantize(amount, currency).scaleb(exponent(currency)))\n\n\n"
        "def from_minor(units: int, currency: str) -> Decimal:\n"
        "    return Decimal(units).scaleb(-exponent(currency))\n"
    )


def _errors() -> str:
    names = [
        ("PaymentNotFound", "No payment with this id exists.", "payment_not_found"),
        ("RefundNotAllowed", "A policy rule or the state forbids it.", "refund_not_allowed"),
        ("GatewayError", "The payment gateway rejected or failed a call.", "gateway_error"),
        ("CurrencyMismatch", "Amounts in different currencies were combined.", "currency_mismatch"),
        ("IdempotencyConflict", "A key was reused with another body.", "idempotency_conflict"),
        ("SettlementError", "A settlement batch could not be closed.", "settlement_error"),
    ]  # fmt: skip
    parts = [
        '"""Errors of ledgerline; ``code`` is the stable name used by the API."""\n\n'
        "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from .models import Money\n\n\n"
        'class LedgerlineError(Exception):\n    code = "error"\n\n\n'
    ]
    for name, doc, code in names:
        if name == "RefundNotAllowed":
            parts.append(
                f'class {name}(LedgerlineError):\n    """{doc}"""\n\n    code = "{code}"\n\n'
                "    def __init__(\n"
                '        self, payment_id: str, message: str, *, code: str = ""\n    ) -> None:\n'
                '        super().__init__(f"{payment_id}: {message}")\n'
                "        self.payment_id = payment_id\n"
                "        if code:\n            self.code = code\n\n\n"
            )
        else:
            parts.append(
                f'class {name}(LedgerlineError):\n    """{doc}"""\n\n    code = "{code}"\n\n\n'
            )
    return "".join(parts).rstrip() + "\n"


_API = '''"""HTTP API for refunds: POST/GET /v1/payments/{payment_id}/refunds."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from fastapi.responses import JSONResponse

from .. import errors
from ..models import Money
from ..refunds import RefundService
from .deps import get_refund_service, require_api_key

router = APIRouter(prefix="/v1/payments", dependencies=[Depends(require_api_key)])

ERROR_STATUS: dict[type[errors.LedgerlineError], int] = {
    errors.PaymentNotFound: 404,
    errors.RefundNotAllowed: 409,
    errors.IdempotencyConflict: 409,
    errors.CurrencyMismatch: 400,
    errors.GatewayError: 502,
}


def error_response(exc: errors.LedgerlineError) -> JSONResponse:
    status = ERROR_STATUS.get(type(exc), 500)
    body: dict[str, Any] = {"code": exc.code, "message": str(exc)}
    for attribute in ("limit", "requested"):
        if hasattr(exc, attribute):
            body[attribute] = str(getattr(exc, attribute))
    return JSONResponse({"error": body}, status_code=status)


@router.post("/{payment_id}/refunds", status_code=201)
def create_refund(
    payment_id: str,
    payload: dict[str, Any],
    request: Request,
    idempotency_key: str | None = Header(default=None),
    service: RefundService = Depends(get_refund_service),
) -> Any:
    amount = None
    if payload.get("amount") is not None:
        try:
            amount = Money.of(str(payload["amount"]), str(payload.get("currency", "EUR")))
        except (InvalidOperation, ValueError) as exc:
            raise HTTPException(400, f"invalid amount: {payload['amount']!r}") from exc
    try:
        reason = str(payload.get("reason", "requested_by_customer"))
        refund = service.refund(payment_id, amount, reason=reason)
    except errors.LedgerlineError as exc:
        return error_response(exc)
    return {"id": refund.id, "amount": str(refund.amount), "status": refund.status.value}


@router.get("/{payment_id}/refunds")
def list_refunds(payment_id: str, service: RefundService = Depends(get_refund_service)) -> Any:
    return [{"id": r.id, "amount": str(r.amount)} for r in service.refunds_of(payment_id)]
'''

_REPORTS = '''"""Finance reports: daily refund and capture totals, CSV export."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal

from .currency import quantize
from .models import RefundStatus
from .store import PaymentStore


@dataclass(frozen=True)
class DailyTotals:
    day: date
    currency: str
    captured: Decimal
    refunded: Decimal

    @property
    def refund_ratio(self) -> Decimal:
        return self.refunded / self.captured if self.captured else Decimal("0")


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=timezone.utc)
    return start, start + timedelta(days=1)


def daily_refund_totals(store: PaymentStore, *, day: date, currency: str) -> DailyTotals:
    start, end = _day_bounds(day)
    captured = refunded = Decimal("0")
    for payment in store.payments_between(start, end, currency=currency):
        captured += payment.captured_amount
        refunded += sum(
            (r.amount.amount for r in payment.refunds if r.status is not RefundStatus.FAILED),
            Decimal("0"),
        )
    return DailyTotals(day, currency, quantize(captured, currency), quantize(refunded, currency))


def export_csv(rows: list[DailyTotals]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["day", "currency", "captured", "refunded", "refund_ratio"])
    for row in rows:
        writer.writerow([row.day.isoformat(), row.currency, row.captured, row.refunded,
                         f"{row.refund_ratio:.4f}"])
    return buffer.getvalue()
'''

_TEST_REPORTS = '''"""Tests of the finance reports (PAY-1350)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from ledgerline.models import Money
from ledgerline.refunds import RefundService
from ledgerline.reports import daily_refund_totals, export_csv
from tests.fakes import FakeGateway, InMemoryStore, fixed_clock
from tests.test_refunds import make_payment


@pytest.fixture
def report_store() -> InMemoryStore:
    store = InMemoryStore()
    store.put(make_payment("pay_r1", "150.00", captures=("100.00", "30.00"), refunds=("90.00",)))
    store.put(make_payment("pay_r2", "80.00", captures=("80.00",), refunds=()))
    service = RefundService(store, FakeGateway(), clock=fixed_clock("2024-05-02T12:00:00+00:00"))
    service.refund("pay_r1", Money.of("50.00", "EUR"))
    return store


def test_daily_refund_totals(report_store):
    totals = daily_refund_totals(report_store, day=date(2024, 5, 2), currency="EUR")
    assert totals.refunded == Decimal("140.00")
    assert totals.captured == Decimal("210.00")


def test_csv_export_columns(report_store):
    totals = daily_refund_totals(report_store, day=date(2024, 5, 2), currency="EUR")
    header = export_csv([totals]).splitlines()[0]
    assert header == "day,currency,captured,refunded,refund_ratio"
'''

_FAKES = '''"""In-memory fakes of the store and the gateway, shared by the test modules."""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime

from ledgerline.models import Money, Payment, Refund


def fixed_clock(iso: str):
    moment = datetime.fromisoformat(iso)
    return lambda: moment


class InMemoryStore:
    def __init__(self) -> None:
        self._payments: dict[str, Payment] = {}
        self._refunds: dict[str, list[Refund]] = defaultdict(list)

    def put(self, payment: Payment) -> None:
        self._payments[payment.id] = payment

    def get(self, payment_id: str) -> Payment | None:
        return self._payments.get(payment_id)

    def add_refund(self, refund: Refund) -> None:
        self._refunds[refund.payment_id].append(refund)
        self._payments[refund.payment_id].refunds.append(refund)

    def refunds_of(self, payment_id: str) -> list[Refund]:
        return list(self._refunds[payment_id])

    def payments_between(self, start: datetime, end: datetime, *, currency: str) -> list[Payment]:
        return [p for p in self._payments.values() if p.currency == currency]


class FakeGateway:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.last_reference: str | None = None
        self.calls: list[tuple[str, str, Money | None]] = []

    def capture(self, reference: str, amount: Money) -> str:
        self.calls.append(("capture", reference, amount))
        return f"cap_fake_{next(self._ids)}"

    def refund(self, reference: str, amount: Money, *, reason: str) -> str:
        self.calls.append(("refund", reference, amount))
        self.last_reference = f"re_fake_{next(self._ids)}"
        return self.last_reference

    def void(self, reference: str) -> None:
        self.calls.append(("void", reference, None))

    def status(self, reference: str) -> str:
        return "succeeded"
'''

_PYPROJECT = """[project]
name = "ledgerline"
version = "2.14.0"
requires-python = ">=3.11"
dependencies = ["fastapi>=0.110", "httpx>=0.27", "sqlalchemy>=2.0"]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-cov", "hypothesis", "ruff==0.6.9", "mypy==1.11.2"]

[tool.ruff]
line-length = 100
target-version = "py311"

[tool.ruff.lint]
select = ["E", "F", "I", "B", "UP"]

[tool.mypy]
strict = true
python_version = "3.11"

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

_CHANGELOG = """# Changelog

All notable changes to ledgerline are documented here.

## Unreleased

## 2.14.0

- PAY-1398: idempotency keys for capture retries.
- PAY-1377: JPY captures settle without minor units.

## 2.13.0

- PAY-1350: daily refund totals report and CSV export.
- PAY-1341: retry 502 responses from Kestrel.
- PAY-1302: multi-capture support for split shipments.
"""


def repository(rng: random.Random) -> dict[str, str]:
    """File bodies by path; ``refund_rules`` is the generated tail of refunds.py."""
    return {
        "pyproject.toml": _PYPROJECT,
        "CHANGELOG.md": _CHANGELOG,
        "README.md": "# ledgerline\n\nPayments ledger and refunds service.\n",
        "src/ledgerline/__init__.py": '__version__ = "2.14.0"\n',
        "src/ledgerline/models.py": _models(),
        "src/ledgerline/gateway.py": _gateway(rng),
        "src/ledgerline/settlement.py": _settlement(rng),
        "src/ledgerline/currency.py": _currency(),
        "src/ledgerline/errors.py": _errors(),
        "src/ledgerline/reports.py": _REPORTS,
        "src/ledgerline/store.py": '"""Payment storage (SQLAlchemy)."""\n',
        "src/ledgerline/api/__init__.py": "",
        "src/ledgerline/api/refunds_api.py": _API,
        "tests/fakes.py": _FAKES,
        "tests/test_reports.py": _TEST_REPORTS,
        "tests/test_currency.py": "",
        "tests/test_gateway.py": "",
        "tests/test_models.py": "",
        "tests/test_settlement.py": "",
        "tests/api/test_refunds_api.py": "",
        "refund_rules": _rules(rng),
    }
