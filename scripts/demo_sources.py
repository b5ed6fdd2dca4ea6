"""The simulated repository and tool output behind ``make_demo_session.py``.

"ledgerline" is a fictional payments service. Its files are generated from templates and
a seeded ``random.Random`` so file reads are long and plausible but fully deterministic;
grep, diff and listings are computed from these files, so the session stays consistent
with itself as the agent edits them.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Sequence

from demo_repo import (
    _API_TESTS,
    _GW_OPS,
    _MODEL_TESTS,
    _PROVIDERS,
    _REPORT_TESTS,
    _STEPS,
)
from demo_repo import (
    repository as _repository,
)

Failure = tuple[str, str, str]  # node id, one-line reason, traceback block

HEADER = (
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0\n"
    "rootdir: /home/dev/ledgerline\nconfigfile: pyproject.toml\n"
    "plugins: cov-5.0.0, hypothesis-6.112.1\n"
)

# --- hand-written fragments the session edits ------------------------------------------

BUG_LINE = "        return Money(payment.authorized_amount - refunded, payment.currency)\n"
FIX_V1 = "        return payment.captured_amount - Money(refunded, payment.currency)\n"
FIX_V2 = (
    '        return Money(max(payment.captured_amount - refunded, Decimal("0")), payment.currency)'
    "  # PAY-1423\n"
)
FIX_V3 = (
    "        # PAY-1423: the limit is what was captured, not what was authorized.\n"
    '        remaining = max(payment.captured_amount - refunded, Decimal("0"))\n'
    "        return Money(remaining, payment.currency)\n"
)
SHORTCUT_OLD = "        if amount is None or amount == payment.amount:\n"
SHORTCUT_NEW = "        if amount is None:\n"
CLAMP_OLD = "        amount = min(amount, limit)\n"
CLAMP_NEW = (
    "        if amount > limit:\n"
    "            raise RefundLimitExceeded(payment.id, requested=amount, limit=limit)\n"
)
IMPORT_OLD = "from .errors import PaymentNotFound, RefundNotAllowed\n"
IMPORT_NEW = "from .errors import PaymentNotFound, RefundLimitExceeded, RefundNotAllowed\n"

REFUNDS_CORE = '''"""Refunds: the refund limit, the policy rules and the workflow (PAY-1102)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal

{import_line}from .gateway import GatewayClient
from .models import Money, Payment, PaymentStatus, Refund, RefundRequest, RefundStatus
from .store import PaymentStore

log = logging.getLogger(__name__)

CHARGEBACK_WINDOW = timedelta(days=120)
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class RuleResult:
    """The verdict of one policy rule on a refund request."""

    allowed: bool
    code: str = ""
    message: str = ""

    @classmethod
    def allow(cls) -> RuleResult:
        return cls(True)

    @classmethod
    def deny(cls, code: str, message: str) -> RuleResult:
        return cls(False, code, message)


class RefundService:
    """Issues refunds against captured payments and records them in the store."""

    def __init__(
        self, store: PaymentStore, gateway: GatewayClient, clock: Clock | None = None
    ) -> None:
        self._store = store
        self._gateway = gateway
        self._clock = clock or (lambda: datetime.now(timezone.utc))

    def refund(
        self,
        payment_id: str,
        amount: Money | None = None,
        *,
        reason: str = "requested_by_customer",
    ) -> Refund:
        """Refund ``amount`` of a payment (everything still refundable when ``None``)."""
        payment = self._store.get(payment_id)
        if payment is None:
            raise PaymentNotFound(payment_id)
        if payment.status not in (PaymentStatus.CAPTURED, PaymentStatus.PARTIALLY_REFUNDED):
            raise RefundNotAllowed(payment_id, f"payment is {{payment.status.value}}")
        limit = self._refundable_amount(payment)
{shortcut}            # Full refund: everything still refundable.
            return self._issue(payment, limit, reason)
        if amount.amount <= 0:
            raise RefundNotAllowed(payment_id, "refund amount must be positive")
{clamp}        request = RefundRequest(payment.id, amount, reason, requested_at=self._clock())
        for rule in RULES:
            verdict = rule(payment, request, self._clock())
            if not verdict.allowed:
                log.info("refund of %s denied by %s: %s", payment.id, verdict.code, verdict.message)
                raise RefundNotAllowed(payment_id, verdict.message, code=verdict.code)
        return self._issue(payment, amount, reason)

    def _refundable_amount(self, payment: Payment) -> Money:
        """What can still be refunded: the limit minus refunds that did not fail."""
        refunded = sum(
            (r.amount.amount for r in payment.refunds if r.status is not RefundStatus.FAILED),
            Decimal("0"),
        )
{limit}
    def _issue(self, payment: Payment, amount: Money, reason: str) -> Refund:
        reference = self._gateway.refund(payment.gateway_reference, amount, reason=reason)
        refund = Refund.pending(payment.id, amount, reason, reference, created_at=self._clock())
        self._store.add_refund(refund)
        log.info("refund %s of %s issued for %s", refund.id, amount, payment.id)
        return refund
'''

TEST_ANCHOR = "\n\n# --- end of refund tests ---\n"
TEST_PARTIAL = '''

def test_partial_refund(service, store):
    """PAY-1423: the limit is captured minus refunded, not authorized minus refunded."""
    store.put(make_payment(authorized="100.00", captures=("40.00", "20.00"), refunds=("30.00",)))
    refund = service.refund("pay_test01", Money.of("40.00", "EUR"))
    assert refund.amount == Money.of("30.00", "EUR")
'''
TEST_RAISES = """

def test_refund_exceeding_captured_raises(service, store):
    store.put(make_payment(authorized="100.00", captures=("40.00", "20.00"), refunds=("30.00",)))
    with pytest.raises(RefundLimitExceeded) as info:
        service.refund("pay_test01", Money.of("40.00", "EUR"))
    assert info.value.limit == Money.of("30.00", "EUR")


def test_full_authorized_amount_on_partial_capture_raises(service, store):
    store.put(make_payment(authorized="100.00", captures=("60.00",)))
    with pytest.raises(RefundLimitExceeded):
        service.refund("pay_test01", Money.of("100.00", "EUR"))
"""

TEST_FILE = (
    '''"""Tests of RefundService (PAY-1102, PAY-1187)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ledgerline.errors import PaymentNotFound, RefundNotAllowed
from ledgerline.models import Capture, CaptureStatus, Money, Payment, PaymentStatus, Refund
from ledgerline.refunds import RefundService
from tests.fakes import FakeGateway, InMemoryStore, fixed_clock


def make_payment(
    payment_id: str = "pay_test01",
    authorized: str = "100.00",
    captures: tuple[str, ...] = ("100.00",),
    refunds: tuple[str, ...] = (),
    currency: str = "EUR",
) -> Payment:
    payment = Payment.authorized(payment_id, Money.of(authorized, currency), merchant_id="m_42")
    for number, value in enumerate(captures):
        payment.captures.append(
            Capture(f"cap_{number}", Money.of(value, currency), CaptureStatus.SETTLED)
        )
    for number, value in enumerate(refunds):
        refund = Refund.settled(f"re_{number}", payment_id, Money.of(value, currency))
        payment.refunds.append(refund)
    payment.status = PaymentStatus.CAPTURED if not refunds else PaymentStatus.PARTIALLY_REFUNDED
    return payment


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def service(store: InMemoryStore, gateway: FakeGateway) -> RefundService:
    return RefundService(store, gateway, clock=fixed_clock("2024-05-02T10:00:00+00:00"))


def test_full_refund_of_single_capture(service, store):
    store.put(make_payment())
    refund = service.refund("pay_test01")
    assert refund.amount == Money.of("100.00", "EUR")


def test_refund_unknown_payment_raises(service):
    with pytest.raises(PaymentNotFound):
        service.refund("pay_missing")


def test_refund_outside_chargeback_window_is_denied(service, store):
    payment = make_payment()
    payment.created_at = payment.created_at.replace(year=2023)
    store.put(payment)
    with pytest.raises(RefundNotAllowed) as info:
        service.refund("pay_test01", Money.of("10.00", "EUR"))
    assert info.value.code == "chargeback_window"


def test_refund_records_gateway_reference(service, store, gateway):
    store.put(make_payment())
    refund = service.refund("pay_test01", Money.of("25.00", "EUR"))
    assert refund.gateway_reference == gateway.last_reference
    assert store.refunds_of("pay_test01") == [refund]


def test_zero_amount_rejected(service, store):
    store.put(make_payment())
    with pytest.raises(RefundNotAllowed):
        service.refund("pay_test01", Money(Decimal("0.00"), "EUR"))
'''
    + TEST_ANCHOR
)

TEST_IMPORT_OLD = "from ledgerline.errors import PaymentNotFound, RefundNotAllowed\n"
TEST_IMPORT_NEW = (
    "from ledgerline.errors import PaymentNotFound, RefundLimitExceeded, RefundNotAllowed\n"
)
REPORT_FIXTURE_OLD = '    assert totals.refunded == Decimal("140.00")\n'
REPORT_FIXTURE_NEW = (
    "    # PAY-1423: 50.00 was asked but only 40.00 of captured money was left to refund.\n"
    '    assert totals.refunded == Decimal("130.00")\n'
)
REPORT_ASK_OLD = 'refund("pay_r1", Money.of("50.00", "EUR"))'
REPORT_ASK_NEW = 'refund("pay_r1", Money.of("40.00", "EUR"))'

ERRORS_ANCHOR = "class RefundNotAllowed(LedgerlineError):\n"
ERRORS_NEW = '''class RefundLimitExceeded(LedgerlineError):
    """A refund asks for more than was captured minus what was already refunded (PAY-1423)."""

    code = "refund_limit_exceeded"

    def __init__(self, payment_id: str, *, requested: Money, limit: Money) -> None:
        super().__init__(f"{payment_id}: refund of {requested} exceeds the limit {limit}")
        self.payment_id = payment_id
        self.requested = requested
        self.limit = limit


'''
API_OLD = "    errors.RefundNotAllowed: 409,\n"
API_NEW = "    errors.RefundNotAllowed: 409,\n    errors.RefundLimitExceeded: 422,\n"
CHANGELOG_ANCHOR = "## Unreleased\n"
CHANGELOG_ENTRY = """
### Fixed

- PAY-1423: partial refunds are limited by the captured amount minus earlier refunds,
  not by the authorized amount. A refund above that limit now raises
  `RefundLimitExceeded` (HTTP 422) instead of being clamped silently.
"""

REPRO = '''"""Reproduce PAY-1423 on the two payments finance reported (scratch, not committed)."""
from decimal import Decimal
from ledgerline.models import Money
from ledgerline.refunds import RefundService
from tests.fakes import FakeGateway, InMemoryStore, fixed_clock
from tests.test_refunds import make_payment

CASES = {
    "pay_8f2c91": ("100.00", ("40.00", "20.00"), ("30.00",), "40.00"),
    "pay_17ab02": ("250.00", ("120.00",), (), "200.00"),
}
for pid, (auth, caps, refs, ask) in CASES.items():
    store = InMemoryStore()
    store.put(make_payment(pid, auth, caps, refs))
    service = RefundService(store, FakeGateway(), clock=fixed_clock("2024-05-02T10:00:00+00:00"))
    refund = service.refund(pid, Money.of(ask, "EUR"))
    captured = sum(Decimal(c) for c in caps) - sum((Decimal(r) for r in refs), Decimal(0))
    print(f"{pid}: asked {ask}, refunded {refund.amount.amount}, limit {captured}")
'''
REPRO_OUTPUT = (
    "pay_8f2c91: asked 40.00, refunded 30.00, limit 30.00\n"
    "pay_17ab02: asked 200.00, refunded 120.00, limit 120.00"
)


def _failure(node: str, reason: str, source: Sequence[str], line: int, kind: str) -> Failure:
    name = node.split("::")[-1]
    body = "\n".join(source)
    block = f"{' ' + name + ' ':_^80}\n\n{body}\n\n{node.split('::')[0]}:{line}: {kind}"
    return node, reason, block


FAIL_PARTIAL = _failure(
    "tests/test_refunds.py::test_partial_refund",
    "AssertionError: assert Money(amount=Decimal('40.00'), currency='EUR') == "
    "Money(amount=Decimal('30.00'), currency='EUR')",
    [
        "    def test_partial_refund(service, store):",
        '        store.put(make_payment(authorized="100.00", captures=("40.00", "20.00"), '
        'refunds=("30.00",)))',
        '        refund = service.refund("pay_test01", Money.of("40.00", "EUR"))',
        '>       assert refund.amount == Money.of("30.00", "EUR")',
        "E       AssertionError: assert Money(amount=Decimal('40.00'), currency='EUR') == "
        "Money(amount=Decimal('30.00'), currency='EUR')",
        "E        +  where Money(amount=Decimal('40.00'), currency='EUR') = Refund(id='re_7d1a', "
        "payment_id='pay_test01', amount=Money(amount=Decimal('40.00'), currency='EUR')).amount",
    ],
    104,
    "AssertionError",
)
FAIL_TYPE = _failure(
    "tests/test_refunds.py::test_partial_refund",
    "TypeError: unsupported operand type(s) for -: 'decimal.Decimal' and 'Money'",
    [
        "    def _refundable_amount(self, payment: Payment) -> Money:",
        "        refunded = sum(",
        "            (r.amount.amount for r in payment.refunds if r.status is not "
        "RefundStatus.FAILED),",
        '            Decimal("0"),',
        "        )",
        ">       return payment.captured_amount - Money(refunded, payment.currency)",
        "E       TypeError: unsupported operand type(s) for -: 'decimal.Decimal' and 'Money'",
    ],
    117,
    "TypeError",
)
FAIL_REPORTS = _failure(
    "tests/test_reports.py::test_daily_refund_totals",
    "AssertionError: assert Decimal('130.00') == Decimal('140.00')",
    [
        "    def test_daily_refund_totals(report_store):",
        '        totals = daily_refund_totals(report_store, day=date(2024, 5, 2), currency="EUR")',
        '>       assert totals.refunded == Decimal("140.00")',
        "E       AssertionError: assert Decimal('130.00') == Decimal('140.00')",
    ],
    57,
    "AssertionError",
)
FAIL_NOT_RAISED = _failure(
    "tests/test_refunds.py::test_full_authorized_amount_on_partial_capture_raises",
    "Failed: DID NOT RAISE <class 'ledgerline.errors.RefundLimitExceeded'>",
    [
        "    def test_full_authorized_amount_on_partial_capture_raises(service, store):",
        '        store.put(make_payment(authorized="100.00", captures=("60.00",)))',
        ">       with pytest.raises(RefundLimitExceeded):",
        "E       Failed: DID NOT RAISE <class 'ledgerline.errors.RefundLimitExceeded'>",
    ],
    120,
    "Failed",
)
FAIL_API_1 = _failure(
    "tests/api/test_refunds_api.py::test_refund_over_limit_is_422",
    "assert 500 == 422",
    [
        "    def test_refund_over_limit_is_422(client, captured_payment):",
        '        response = client.post(f"/v1/payments/{captured_payment}/refunds", '
        'json={"amount": "999.00"})',
        ">       assert response.status_code == 422",
        "E       assert 500 == 422",
        "E        +  where 500 = <Response [500 Internal Server Error]>.status_code",
    ],
    88,
    "AssertionError",
)
FAIL_API_2 = _failure(
    "tests/api/test_refunds_api.py::test_error_body_names_the_limit",
    "KeyError: 'limit'",
    [
        "    def test_error_body_names_the_limit(client, captured_payment):",
        '        body = client.post(f"/v1/payments/{captured_payment}/refunds", '
        'json={"amount": "999.00"}).json()',
        '>       assert body["error"]["limit"] == "60.00 EUR"',
        "E       KeyError: 'limit'",
    ],
    97,
    "KeyError",
)

ERRORS_REPORTS = [
    (
        f"tests/test_reports.py::{name}",
        "ledgerline.errors.RefundLimitExceeded: pay_r1: refund of 50.00 EUR exceeds the "
        "limit 40.00 EUR",
        f"{' ERROR at setup of ' + name + ' ':_^80}\n\n"
        "    @pytest.fixture\n    def report_store() -> InMemoryStore:\n"
        "        ...\n"
        '>       service.refund("pay_r1", Money.of("50.00", "EUR"))\n\n'
        "src/ledgerline/refunds.py:71: in refund\n"
        "    raise RefundLimitExceeded(payment.id, requested=amount, limit=limit)\n"
        "E   ledgerline.errors.RefundLimitExceeded: pay_r1: refund of 50.00 EUR exceeds the "
        "limit 40.00 EUR\n\ntests/test_reports.py:23: RefundLimitExceeded",
    )
    for name in ("test_daily_refund_totals", "test_csv_export_columns")
]


def line_of(text: str, fragment: str) -> int:
    """1-based line number where ``fragment`` starts in ``text``."""
    return text[: text.index(fragment)].count("\n") + 1


def numbered(text: str) -> str:
    """A file as ``read_file`` shows it: ``cat -n`` style numbered lines."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def grep(files: dict[str, str], pattern: str, under: str) -> str:
    """``grep -rnE pattern under`` over the simulated repository."""
    regex = re.compile(pattern)
    hits = [
        f"{path}:{number}:{line}"
        for path, text in sorted(files.items())
        if path.startswith(under)
        for number, line in enumerate(text.splitlines(), 1)
        if regex.search(line)
    ]
    return "\n".join(hits) if hits else "(no matches)"


def diff(before: dict[str, str], after: dict[str, str]) -> str:
    """``git diff`` of the simulated working tree."""
    chunks = []
    for path in sorted(after):
        if before.get(path) == after[path]:
            continue
        chunks.append(f"diff --git a/{path} b/{path}\nindex 4be1c0a..9d02e7f 100644")
        lines = difflib.unified_diff(
            before.get(path, "").splitlines(),
            after[path].splitlines(),
            f"a/{path}",
            f"b/{path}",
            lineterm="",
        )
        chunks.append("\n".join(lines))
    return "\n".join(chunks)


def diff_stat(before: dict[str, str], after: dict[str, str]) -> str:
    """``git diff --stat`` of the simulated working tree."""
    rows, added, removed = [], 0, 0
    for path in sorted(after):
        if before.get(path) == after[path]:
            continue
        lines = list(difflib.ndiff(before.get(path, "").splitlines(), after[path].splitlines()))
        plus = sum(1 for x in lines if x.startswith("+ "))
        minus = sum(1 for x in lines if x.startswith("- "))
        added, removed = added + plus, removed + minus
        rows.append(f" {path:<36} | {plus + minus:>3} {'+' * plus}{'-' * minus}")
    summary = f" {len(rows)} files changed, {added} insertions(+), {removed} deletions(-)"
    return "\n".join([*rows, summary])


def coverage(rng: random.Random, files: dict[str, str]) -> str:
    """``pytest --cov --cov-report=term-missing`` output for the simulated package."""
    rows = [f"{'Name':<40}{'Stmts':>7}{'Miss':>6}{'Cover':>7}   Missing", "-" * 72]
    total = missed = 0
    for path in sorted(p for p in files if p.startswith("src/") and p.endswith(".py")):
        stmts = max(1, sum(1 for line in files[path].splitlines() if line.strip()) * 3 // 4)
        miss = 0 if stmts < 10 else rng.randrange(0, max(2, stmts // 12))
        gaps = sorted(rng.sample(range(10, max(11, stmts)), min(miss, max(0, stmts - 10))))
        total, missed = total + stmts, missed + miss
        cover = f"{100 * (stmts - miss) // stmts}%"
        rows.append(f"{path:<40}{stmts:>7}{miss:>6}{cover:>7}   {', '.join(map(str, gaps))}")
    rows += ["-" * 72, f"{'TOTAL':<40}{total:>7}{missed:>6}{100 * (total - missed) // total:>6}%"]
    nodes = suite_size(8)
    return "\n".join([*rows, "", _summary(0, nodes, nodes * rng.uniform(0.03, 0.04))])


def changed_files(before: dict[str, str], after: dict[str, str]) -> int:
    return sum(1 for path in after if before.get(path) != after[path])


def listing(files: dict[str, str]) -> str:
    root = sorted({p.split("/")[0] for p in files} | {".git", ".github", ".venv"})
    rows = ["total 96"]
    for name in root:
        is_dir = name in {".git", ".github", ".venv"} or any(
            p.startswith(name + "/") for p in files
        )
        size = 4096 if is_dir else len(files[name])
        mode = "drwxr-xr-x" if is_dir else "-rw-r--r--"
        rows.append(f"{mode}  1 dev dev {size:>6} May  2 09:12 {name}")
    pkg = sorted(p.split("/")[-1] for p in files if p.startswith("src/ledgerline/"))
    tests = sorted(p.split("/", 1)[1] for p in files if p.startswith("tests/"))
    return "\n".join([*rows, "", "  ".join(pkg), "", "  ".join(tests)])


def _suite(refund_tests: int) -> list[str]:
    words = ["minor_units", "rounding", "from_string", "zero_decimal", "three_decimal"]
    currencies = ["EUR", "USD", "JPY", "GBP", "CHF", "KWD", "BHD", "SEK", "NOK", "PLN"]
    suite = [f"tests/test_currency.py::test_{w}[{c}]" for w in words for c in currencies][:44]
    suite += [f"tests/test_gateway.py::test_{p}_{op}" for p in _PROVIDERS for op in _GW_OPS]
    suite += [f"tests/test_models.py::test_{m}" for m in _MODEL_TESTS]
    suite += [f"tests/test_settlement.py::test_{s}" for s in _STEPS]
    suite += [f"tests/test_reports.py::test_{r}" for r in _REPORT_TESTS]
    suite += [f"tests/api/test_refunds_api.py::test_{a}" for a in _API_TESTS]
    refund_names = [
        "full_refund_of_single_capture", "refund_unknown_payment_raises",
        "refund_outside_chargeback_window_is_denied", "refund_records_gateway_reference",
        "zero_amount_rejected", "partial_refund", "refund_exceeding_captured_raises",
        "full_authorized_amount_on_partial_capture_raises",
    ]  # fmt: skip
    return suite + [f"tests/test_refunds.py::test_{n}" for n in refund_names[:refund_tests]]


def suite_size(refund_tests: int) -> int:
    return len(_suite(refund_tests))


def _summary(failed: int, passed: int, seconds: float, errors: int = 0) -> str:
    parts = ([f"{failed} failed"] if failed else []) + [f"{passed} passed"]
    parts += [f"{errors} errors"] if errors else []
    return f"{' ' + ', '.join(parts) + f' in {seconds:.2f}s ':=^80}"


def _failures(failures: Sequence[Failure], errors: Sequence[Failure] = ()) -> list[str]:
    if not failures and not errors:
        return []
    lines = [f"{' ERRORS ':=^80}", *[e[2] for e in errors]] if errors else []
    lines += [f"{' FAILURES ':=^80}", *[f[2] for f in failures]] if failures else []
    lines.append(f"{' short test summary info ':=^80}")
    lines += [f"FAILED {node} - {reason}" for node, reason, _ in failures]
    lines += [f"ERROR {node} - {reason}" for node, reason, _ in errors]
    return lines


def pytest_q(
    rng: random.Random,
    target: str,
    refund_tests: int,
    failures: Sequence[Failure],
    errors: Sequence[Failure] = (),
) -> str:
    """``pytest -q`` output over the whole suite, or one test file when ``target`` is set."""
    nodes = [n for n in _suite(refund_tests) if n.startswith(target)]
    failed, errored = {f[0] for f in failures}, {e[0] for e in errors}
    marks = "".join("F" if n in failed else "E" if n in errored else "." for n in nodes)
    lines = []
    for start in range(0, len(marks), 72):
        chunk = marks[start : start + 72]
        pct = round(100 * (start + len(chunk)) / len(marks))
        lines.append(f"{chunk:<74}[{pct:>3}%]")
    seconds = len(nodes) * rng.uniform(0.018, 0.026) + 0.3
    passed = len(nodes) - len(failed) - len(errored)
    summary = _summary(len(failed), passed, seconds, len(errored))
    return "\n".join([*lines, *_failures(failures, errors), summary])


def pytest_v(rng: random.Random, failures: Sequence[Failure], refund_tests: int = 8) -> str:
    """``pytest -v`` output over the whole suite."""
    nodes = _suite(refund_tests)
    failed = {f[0] for f in failures}
    lines = [HEADER.rstrip(), f"collected {len(nodes)} items", ""]
    for number, node in enumerate(nodes, 1):
        status = "FAILED" if node in failed else "PASSED"
        lines.append(f"{node} {status:<8}[{round(100 * number / len(nodes)):>3}%]")
    lines.append("")
    seconds = len(nodes) * rng.uniform(0.018, 0.026) + 0.4
    summary = _summary(len(failed), len(nodes) - len(failed), seconds)
    return "\n".join([*lines, *_failures(failures), summary])


def git_log(rng: random.Random) -> str:
    subjects = [
        "Bump httpx to 0.27.2", "PAY-1398: idempotency keys for capture retries",
        "PAY-1377: settle JPY captures without minor units", "Refactor gateway error mapping",
        "PAY-1350: daily refund totals report", "PAY-1341: retry 502 from Kestrel",
        "Pin ruff 0.6.9 in CI", "PAY-1302: multi-capture support for split shipments",
    ]  # fmt: skip
    shas = ["3e0b5d2", "b81f4c7"] + [f"{rng.getrandbits(28):07x}" for _ in subjects[2:]]
    head = f"{shas[0]} (HEAD -> main, origin/main, origin/HEAD) {subjects[0]}"
    return "\n".join([head, *(f"{s} {m}" for s, m in zip(shas[1:], subjects[1:], strict=True))])


def push_output(branch: str) -> str:
    url = f"https://github.com/acme-payments/ledgerline/pull/new/{branch}"
    return (
        "Enumerating objects: 27, done.\nCounting objects: 100% (27/27), done.\n"
        "Delta compression using up to 8 threads\nCompressing objects: 100% (14/14), done.\n"
        "Writing objects: 100% (15/15), 3.91 KiB | 3.91 MiB/s, done.\n"
        "Total 15 (delta 11), reused 0 (delta 0), pack-reused 0\n"
        "remote: Resolving deltas: 100% (11/11), completed with 9 local objects.\nremote:\n"
        f"remote: Create a pull request for '{branch}' on GitHub by visiting:\n"
        f"remote:      {url}\nremote:\n"
        "To github.com:acme-payments/ledgerline.git\n"
        f" * [new branch]      {branch} -> {branch}\n"
        f"branch '{branch}' set up to track 'origin/{branch}'."
    )


def repository(rng: random.Random) -> dict[str, str]:
    """Every file of the simulated repository, by path."""
    files = _repository(rng)
    files["src/ledgerline/refunds.py"] = REFUNDS_CORE.format(
        import_line=IMPORT_OLD, shortcut=SHORTCUT_OLD, clamp=CLAMP_OLD, limit=BUG_LINE
    ) + files.pop("refund_rules")
    files["tests/test_refunds.py"] = TEST_FILE
    return files
