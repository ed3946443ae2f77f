"""Booleans are not integers to the frequency encoders: True/False are refused in a domain, never read as 1/0.

Python's ``True == 1`` (and equal hashes) made dict lookup accept ``True`` as the domain value 1; the
numeric encoders already refused booleans. The single encoder, the batch encoder and ``ldp encode`` now
refuse a boolean with a ParameterError as they do an out-of-domain value; boolean RAPPOR, whose values
are booleans, is unchanged.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client import batch, encode_batch
from ldp.client.encoders import make_encoder
from ldp.domain import DomainIndex, normalize_domain
from ldp.errors import ParameterError
from ldp.specs import spec_from_dict

INT_SPECS = [
    spec_from_dict({"mechanism": name, "domain": [0, 1, 2], "epsilon": 1.0})
    for name in ("grr", "sue", "oue", "olh", "blh")
] + [
    spec_from_dict({"mechanism": "binary-rr", "domain": [0, 1], "epsilon": 1.0}),
    spec_from_dict(
        {"mechanism": "rappor", "encoding": "basic", "domain": [0, 1, 2], "f": "1/4", "p": "1/4", "q": "3/4"}
    ),
]
BOOLEANS = [True, False, np.True_, np.False_]


@pytest.mark.parametrize("spec", INT_SPECS, ids=lambda s: s.mechanism)
@pytest.mark.parametrize("value", BOOLEANS, ids=repr)
def test_single_encoder_refuses_booleans_in_integer_domains(spec, value):
    encoder = make_encoder(spec)
    with pytest.raises(ParameterError, match="is a boolean"):
        encoder.encode(value)
    encoder.encode(int(value))  # the integer itself is fine
    encoder.encode(str(int(value)))  # and its decimal string


@pytest.mark.parametrize("spec", INT_SPECS, ids=lambda s: s.mechanism)
@pytest.mark.parametrize(
    "values",
    [[True], [1, True], [True, 1], [0, 1, False], np.array([True, False]), np.array([1, True], dtype=object)],
    ids=repr,
)
def test_batch_encoder_refuses_booleans_wherever_they_are(spec, values):
    with pytest.raises(ParameterError, match="is a boolean"):
        encode_batch(spec, values, np.random.default_rng(1))
    encode_batch(spec, [1, 0, "1", 1.0], np.random.default_rng(1))


def test_domain_lookup_and_domains():
    index = DomainIndex((0, 1, 2))
    assert (index.index(1), index.index("1"), index.index(1.0)) == (1, 1, 1)
    with pytest.raises(ParameterError, match="True is a boolean, not a domain value"):
        index.index(True)
    with pytest.raises(ParameterError, match="values must be strings or integers"):
        normalize_domain([True, False])  # no domain holds booleans
    words = DomainIndex(("True", "False"))  # their text is a fine domain, looked up as text
    assert words.index("False") == 1
    with pytest.raises(ParameterError, match="is a boolean"):
        words.index(False)


def test_boolean_rappor_still_takes_booleans():
    spec = spec_from_dict({"mechanism": "rappor", "encoding": "boolean", "f": "1/2", "p": "1/4", "q": "3/4"})
    make_encoder(spec).encode(True)
    encode_batch(spec, [True, False, 1, 0], np.random.default_rng(1))


def test_batch_bloom_hashes_each_value_as_itself():
    """1, 1.0 and True are equal dict keys but hash as "1", "1.0", "True": the batch keeps them apart."""
    spec = spec_from_dict(
        {"mechanism": "rappor", "num_bits": 64, "num_hashes": 2, "f": 0, "p": "1/4", "q": "3/4"}
    )
    values = [1, 1.0, True, 1]
    assert batch.factorize_values(values)[1] == [1, 1.0, True]
    assert [type(v) for v in batch.factorize_values(values)[1]] == [int, float, bool]
    mixed = batch._rappor_bloom_words(spec, values, np.zeros(len(values), dtype=np.int64))
    alone = [batch._rappor_bloom_words(spec, [v], np.zeros(1, dtype=np.int64))[0] for v in values]
    assert mixed.tolist() == [row.tolist() for row in alone]
    assert len({tuple(row) for row in mixed.tolist()}) == 3


def test_ldp_encode_refuses_booleans_from_jsonl(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(ldp.GRR(domain=(0, 1, 2), epsilon=1.0).to_json())
    values = tmp_path / "values.jsonl"
    values.write_text(json.dumps({"value": 1}) + "\n" + json.dumps({"value": True}) + "\n")
    out = tmp_path / "reports.jsonl"
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(out)])
    assert result.exit_code != 0
    assert "row 2" in result.output and "True is a boolean" in result.output
    assert not out.exists()
    values.write_text(json.dumps({"value": 1}) + "\n" + json.dumps({"value": "1"}) + "\n")
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 2
