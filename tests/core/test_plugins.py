"""The plug-in registry: every mechanism is found through it, and a missing piece is a clear error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ldp
import ldp.aggregator
import ldp.client
import ldp.simulations
from ldp.errors import ParameterError
from ldp.plugins import ROLES, has_implementation, implementation, implements
from ldp.specs import FrequencySpec, NumericSpec
from ldp.specs.base import ExactPrivacySpec, registered_specs


@pytest.mark.parametrize("name", sorted(registered_specs()))
@pytest.mark.parametrize("role", ["encoder", "batch_encoder", "accumulator"])
def test_every_mechanism_has_its_client_and_aggregator_pieces(name, role):
    assert has_implementation(registered_specs()[name], role)


@pytest.mark.parametrize("name", sorted(registered_specs()))
def test_every_mechanism_has_its_audit_events(name):
    import ldp.audit_events  # noqa: F401 - the audit layer registers its families on import

    assert has_implementation(registered_specs()[name], "audit_events")


@pytest.mark.parametrize(
    "name", sorted(n for n, c in registered_specs().items() if issubclass(c, FrequencySpec))
)
def test_every_frequency_oracle_has_a_fast_simulator(name):
    assert has_implementation(registered_specs()[name], "fast_simulator")


@dataclasses.dataclass(frozen=True)
class _Unplugged(ExactPrivacySpec):  # a spec class nothing implements
    mechanism = "unplugged"


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_spec_without_an_implementation_is_a_clear_error(role):
    with pytest.raises(ParameterError, match=rf"no {ROLES[role]} for _Unplugged \(mechanism 'unplugged'\)"):
        implementation(_Unplugged, role)


def test_the_layers_report_an_unplugged_spec_by_name():
    from ldp.aggregator import make_aggregator
    from ldp.client import encode_batch, make_encoder

    spec = object.__new__(_Unplugged)
    for call in (
        lambda: make_encoder(spec),
        lambda: make_aggregator(spec),
        lambda: encode_batch(spec, ["a"], np.random.default_rng(0)),
    ):
        with pytest.raises(ParameterError, match="_Unplugged"):
            call()


def test_subclasses_use_their_base_class_implementation_and_a_second_claim_is_refused():
    class FasterOUE(ldp.OUE):
        pass

    assert implementation(FasterOUE, "accumulator") is implementation(ldp.OUE, "accumulator")
    with pytest.raises(RuntimeError, match="already has"):
        implements(ldp.GRR, "accumulator")(lambda spec, threads=1: None)


def test_unknown_role_is_an_error():
    with pytest.raises(ParameterError, match="unknown plug-in role"):
        implementation(ldp.GRR, "decoder")


@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=("a", "b", "c"), epsilon=1.0),
        ldp.OUE(domain=("a", "b", "c"), epsilon=1.0),
        ldp.OLH(domain=("a", "b", "c"), epsilon=1.0),
        ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4"),
        ldp.Duchi(epsilon=1.0, low=0.0, high=1.0),
    ],
    ids=lambda s: s.mechanism,
)
def test_the_registry_gives_the_same_objects_the_layers_use(spec):
    from ldp.aggregator import make_aggregator
    from ldp.client import make_encoder

    assert type(make_aggregator(spec)) is type(implementation(spec, "accumulator")(spec, threads=1))
    assert type(make_encoder(spec)) is type(implementation(spec, "encoder")(spec, None))


def test_the_prr_and_the_ledger_share_one_value_identity():
    spec = ldp.Rappor.basic(("a", "b"), f="1/2", p="1/2", q="3/4")
    assert spec.memo_key("b") == b"1"
    with pytest.raises(ParameterError):
        spec.memo_key("zzz")
    bloom = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")
    with pytest.raises(ParameterError, match="None"):
        bloom.memo_key(None)


def test_the_mechanism_lists_are_views_of_the_one_registry():
    from ldp.commands.spec import MECHANISMS
    from ldp.specs import FREQUENCY_MECHANISMS, HEAVY_HITTER_MECHANISMS, NUMERIC_MECHANISMS
    from ldp.specs.key_value import KEY_VALUE_MECHANISMS
    from ldp.specs.ranges import RANGE_MECHANISMS

    registered = set(registered_specs())
    kinds = (
        FREQUENCY_MECHANISMS,
        NUMERIC_MECHANISMS,
        HEAVY_HITTER_MECHANISMS,
        RANGE_MECHANISMS,
        KEY_VALUE_MECHANISMS,
    )
    from ldp.specs.multiattr import MultiAttribute

    assert set().union(*kinds) | {"rappor", MultiAttribute.mechanism} == registered
    assert set(MECHANISMS) == registered | {"auto"}
    # smaller reports first: by report_size_rank, ties in declaration order (ldp.registry)
    declared = [name for name in registered_specs() if name in FREQUENCY_MECHANISMS]
    by_rank = sorted(declared, key=lambda name: FREQUENCY_MECHANISMS[name].report_size_rank)
    assert list(FREQUENCY_MECHANISMS) == by_rank
    assert list(FREQUENCY_MECHANISMS)[:2] == ["binary-rr", "grr"]
    assert all(registered_specs()[name] is cls for name, cls in FREQUENCY_MECHANISMS.items())


def test_a_newly_registered_mechanism_appears_in_the_lists(monkeypatch):
    from ldp.specs import FREQUENCY_MECHANISMS, base

    class Newcomer(ldp.GRR):
        mechanism = "newcomer"
        report_size_rank = 1

    monkeypatch.setitem(base._REGISTRY, "newcomer", Newcomer)
    assert list(FREQUENCY_MECHANISMS)[:3] == ["binary-rr", "grr", "newcomer"]


@pytest.mark.parametrize("name", sorted(registered_specs()))
def test_every_mechanism_describes_its_privacy_or_says_why_not(name):
    from ldp.privacy.mechanisms import mechanism_loss
    from ldp.specs.pairs import PrivacyPiece

    cls = registered_specs()[name]
    spec = {
        "rappor": lambda: cls(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4"),
        "gaussian": lambda: cls(epsilon=1.0, delta=1e-6, low=0.0, high=1.0),
        "pem": lambda: cls(epsilon=1.0),
        "treehist": lambda: cls(epsilon=1.0),
        "multi-attribute": lambda: cls.example(("a", "b", "c"), epsilon=1.0),
    }.get(
        name,
        lambda: (
            cls(epsilon=1.0, low=0.0, high=1.0)
            if issubclass(cls, NumericSpec)
            else cls(domain=("a", "b") if name == "binary-rr" else ("a", "b", "c"), epsilon=1.0)
        ),
    )()
    if name == "gaussian":
        with pytest.raises(ParameterError, match="no exact curve"):
            spec.privacy_pieces(1)
        return
    pieces = spec.privacy_pieces(1)
    assert pieces and all(isinstance(p, PrivacyPiece) and p.log_p.shape == p.log_q.shape for p in pieces)
    for p in pieces:  # each piece is a pair of probability distributions
        assert np.exp(p.log_p).sum() == pytest.approx(1.0) and np.exp(p.log_q).sum() == pytest.approx(1.0)
    loss = mechanism_loss(spec, 1)
    bound = spec.epsilon_one if spec.memoized else spec.epsilon
    assert loss.epsilon(0.0) <= bound * (1 + 1e-9)  # the curve's pure epsilon never exceeds the claim


def test_a_spec_class_without_pieces_says_so():
    from ldp.privacy.mechanisms import mechanism_loss

    with pytest.raises(ParameterError, match="provides no worst-case pair"):
        mechanism_loss(object.__new__(_Unplugged))


@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=("a", "b", "c"), epsilon=1.0),
        ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4"),
        ldp.Duchi(epsilon=1.0, low=0.0, high=1.0),
    ],
    ids=lambda s: s.mechanism,
)
def test_every_accumulator_takes_one_estimate_signature_and_names_unknown_options(spec):
    from ldp.aggregator import Accumulator, make_aggregator
    from ldp.client import encode_batch

    accumulator = make_aggregator(spec)
    assert isinstance(accumulator, Accumulator)
    accumulator.add_batch(
        encode_batch(
            spec, ["a", "b"] if spec.report_kind != "numeric" else [0.2, 0.4], np.random.default_rng(3)
        )
    )
    assert len(accumulator.estimate(0.9, consistency="none")) >= 1
    with pytest.raises(ParameterError, match="does not take colour"):
        accumulator.estimate(0.9, colour="red")


def test_the_accumulator_interface_is_abstract():
    from ldp.aggregator import Accumulator

    with pytest.raises(TypeError):
        Accumulator()
