"""Multi-attribute records: several attributes under one ε, the budget split for the user (docs/multi-attribute.md).

Each attribute is a spec of the registry (a frequency oracle for a
categorical attribute, a numeric mechanism for a number), calibrated at the
ε its share of the budget gives. Three methods:

``smp`` (sampling; the default)
    Each user samples ``sample`` = k of the d attributes uniformly without
    replacement and reports each at ε/k through its mechanism; the sampled
    indices travel in the clear. The record's exact ratio is the product of
    the k largest attribute ratios. k defaults to Wang et al.'s rule
    k = max(1, min(d, ⌊ε/2.5⌋)) (:func:`smp_sample_size`).
``spl`` (splitting)
    Every attribute reported at ε/d; the ratio is the product of all d.
``rsfd-grr`` (random sampling plus fake data, GRR)
    Each user samples one attribute and reports it by GRR; every other
    attribute carries a uniform fake value, so the sampled index is hidden.
``rsfd-sue-z``, ``rsfd-sue-r``, ``rsfd-oue-z``, ``rsfd-oue-r`` (RS+FD over unary encoding)
    The sampled attribute is reported by SUE or OUE; every other attribute
    carries fake data: ``-z`` the UE perturbation of the zero vector,
    ``-r`` the UE report of a uniformly random value.

Every RS+FD record output y has P[y | x] = (Π_i F_i(y_i))·(1/d) Σ_j t_j(y_j, x_j)
with F_j the fake distribution of attribute j and t_j = P_j(y_j | x_j)/F_j(y_j),
so the exact worst ratio of two records is max_y Σ_j t_j(y_j, x_j) / Σ_j t_j(y_j, x′_j):
each attribute contributes one of a few (t(y, x), t(y, x′)) pairs and the
maximum of the ratio of sums is found exactly by Dinkelbach's iteration
(:func:`max_ratio_of_sums`). For GRR and ``-z`` it is Σ_j a_j / Σ_j b_j
(a_j, b_j the largest and smallest t_j: e^ε′ with every oracle at ε′, no
amplification); over records that differ in ONE attribute it is
max_j (a_j + B_j)/(b_j + B_j), B_j = Σ_{i≠j} b_i, = (e^ε′ + d − 1)/d for equal
attributes: the paper's ε′ = ln(d(e^ε − 1) + 1) is this attribute-level ε
(:attr:`MultiAttribute.attribute_epsilon`). ``-r`` fake data weakens the
amplification (the smallest t_j is below b_j): its attribute-level ε at the
paper's ε′ exceeds ε, and :meth:`MultiAttribute.rsfd_amplified` calibrates ε′
down until the exact attribute-level ratio meets ε (docs/multi-attribute.md#rsfd-privacy).

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin,
   G. Yu. "Collecting and analyzing multidimensional data with local
   differential privacy". ICDE 2019 (sampling k attributes, §IV).
.. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. "Random
   sampling plus fake data: multidimensional frequency estimates with
   local differential privacy". CIKM 2021.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp.errors import AccountingError, InputError, SpecError
from ldp.exact import epsilon_bound_of_ratio, ratio_within
from ldp.report import declare_report_field, declare_report_field_family
from ldp.report_schema import PartField, ReportSchema, report_schema_of
from ldp.specs.base import ExactPrivacySpec, Spec, load_spec
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import check_epsilon, check_int

__all__ = [
    "MULTI_ATTRIBUTE_METHODS",
    "RSFD_METHODS",
    "SAMPLED_FIELD",
    "MultiAttribute",
    "max_ratio_of_sums",
    "rsfd_fake_support",
    "rsfd_support_probabilities",
    "smp_sample_size",
]

#: The report field of ``smp``: a d-bit vector with the k sampled attributes' bits set (sent in the clear).
SAMPLED_FIELD = "sampled"
# Known before any instance names them, so a record report parses whatever spec the process built first.
declare_report_field(SAMPLED_FIELD)
declare_report_field_family(r"a[0-9]+_")

#: RS+FD methods: the oracle of every attribute, and the fake data of a non-sampled one
#: (``uniform``: a uniform value; ``zero``: the oracle's perturbation of the zero vector; ``random``: the
#: oracle's report of a uniform value).
RSFD_METHODS: dict[str, tuple[str, str]] = {
    "rsfd-grr": ("grr", "uniform"),
    "rsfd-sue-z": ("sue", "zero"),
    "rsfd-sue-r": ("sue", "random"),
    "rsfd-oue-z": ("oue", "zero"),
    "rsfd-oue-r": ("oue", "random"),
}
#: The budget splits: sampling (default), splitting, random sampling plus fake data (RS+FD).
MULTI_ATTRIBUTE_METHODS = ("smp", "spl", *RSFD_METHODS)
#: Fields of an attribute's spec JSON that hold its calibration (dropped when the split changes).
_NAME_KEY = "name"


def smp_sample_size(epsilon: float, attributes: int) -> int:
    """Wang et al.'s k: max(1, min(d, ⌊ε/2.5⌋)) attributes per user (ICDE 2019, §IV).

    Examples
    --------
    >>> from ldp.specs.multiattr import smp_sample_size
    >>> smp_sample_size(1.0, 4), smp_sample_size(5.0, 4), smp_sample_size(20.0, 4)
    (1, 2, 4)
    """
    return max(1, min(attributes, math.floor(epsilon / 2.5)))


def rsfd_fake_support(method: str, p: Any, q: Any, size: int) -> Any:
    """P[a fake report of an attribute supports value v] under RS+FD ``method`` (exact for Fractions).

    ``rsfd-grr``: a uniform value, 1/k. ``-z``: a zero vector perturbed, bit v
    set with q. ``-r``: a uniform value's UE report, bit v set with
    p/k + (1 − 1/k)q = q + (p − q)/k.
    """
    fake = RSFD_METHODS[method][1]
    if fake == "uniform":
        return Fraction(1, size) if isinstance(p, Fraction) else 1 / size
    if fake == "zero":
        return q
    return q + (p - q) / size


def rsfd_support_probabilities(
    p: Any, q: Any, attributes: int, size: int, method: str = "rsfd-grr"
) -> tuple[Any, Any]:
    """(p*, q*) of one attribute under RS+FD: P[report supports v | x_j = v] and P[... | x_j ≠ v].

    A user reports attribute j by its oracle (p, q) with probability 1/d,
    else fake data supporting v with φ (:func:`rsfd_fake_support`):
    p* = p/d + (d − 1)φ/d, q* = q/d + (d − 1)φ/d. The pure-oracle estimate
    (C_v/n − q*)/(p* − q*) = d(C_v/n − q*)/(p − q) is the paper's unbiased
    estimator (docs/multi-attribute.md#estimators), for GRR (C_v the count of v)
    and UE (C_v the count of reports with bit v set) alike.
    """
    fake = (attributes - 1) * rsfd_fake_support(method, p, q, size) / attributes
    return p / attributes + fake, q / attributes + fake


def max_ratio_of_sums(options: Sequence[Sequence[tuple[Fraction, Fraction]]]) -> Fraction:
    """max over one (u_j, w_j) of each ``options[j]`` of Σ_j u_j / Σ_j w_j, exactly (Dinkelbach).

    From any choice's ratio λ, every part takes the pair maximizing
    u − λw (the sum separates); the new ratio is larger unless that maximum
    is 0, when λ is the optimum. Finitely many choices: it stops exactly.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from ldp.specs.multiattr import max_ratio_of_sums
    >>> max_ratio_of_sums([[(F(3), F(1)), (F(1), F(1))], [(F(2), F(2)), (F(1), F(1))]])
    Fraction(2, 1)
    """
    choice = [part[0] for part in options]
    ratio = sum((u for u, _ in choice), Fraction(0)) / sum((w for _, w in choice), Fraction(0))
    while True:
        choice = [max(part, key=lambda pair: pair[0] - ratio * pair[1]) for part in options]
        gain = sum((u - ratio * w for u, w in choice), Fraction(0))
        if gain <= 0:
            return ratio
        ratio = sum((u for u, _ in choice), Fraction(0)) / sum((w for _, w in choice), Fraction(0))


#: Most outputs of the explicit worst-pair distribution of an ``smp`` record (:meth:`MultiAttribute.report_pieces`).
_MAX_PIECE_OUTPUTS = 1 << 22


def _joint_distribution(pieces: Sequence[PrivacyPiece]) -> tuple[np.ndarray, np.ndarray]:
    """(log P under x, log P under x′) over the joint outputs of independent pieces (copies included)."""
    lp, lq = np.zeros(1), np.zeros(1)
    for part in pieces:
        for _ in range(part.copies):
            lp = np.add.outer(lp, part.log_p).ravel()
            lq = np.add.outer(lq, part.log_q).ravel()
    return lp, lq


def _attribute_template(item: Any, position: int) -> tuple[str, dict[str, Any]]:
    if isinstance(item, Spec):
        data: dict[str, Any] = item.to_dict()
        data.pop("format", None)
        data.setdefault(_NAME_KEY, f"a{position}")
    elif isinstance(item, Mapping):
        data = dict(item)
    else:
        raise SpecError(
            f"multi-attribute: attributes[{position}] must be an object with 'name' and 'mechanism', "
            f"got {type(item).__name__}"
        )
    name = data.pop(_NAME_KEY, None)
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"multi-attribute: attributes[{position}] needs a non-empty 'name'")
    if "mechanism" not in data:
        raise SpecError(f"multi-attribute: attribute {name!r} has no 'mechanism'")
    return name.strip(), data


@dataclasses.dataclass(frozen=True, init=False)
class MultiAttribute(ExactPrivacySpec):
    """Records of several attributes under one ε, by sampling, splitting or RS+FD (docs/multi-attribute.md).

    Parameters
    ----------
    attributes : sequence of mapping
        One object per attribute: ``name`` (its column) and a spec of the
        registry without ``epsilon`` (``{"name": "browser", "mechanism":
        "grr", "domain": [...]}``, ``{"name": "latency", "mechanism":
        "piecewise", "low": 0, "high": 1000}``); each is calibrated at its
        share of ε. An object that carries ``epsilon`` (a stored spec) is
        read as is and checked with the others against the claim.
    epsilon : float
        ε of one record's report (any two records), certified exactly.
    method : {"smp", "spl", "rsfd-grr", "rsfd-sue-z", "rsfd-sue-r", "rsfd-oue-z", "rsfd-oue-r"}
        The budget split (module docstring); an RS+FD method needs
        attributes of its oracle (GRR, SUE or OUE) and calibrates each at ε
        itself (see :meth:`rsfd_amplified` for the paper's calibration).
    sample : int, optional
        ``smp`` only: attributes per user (default
        :func:`smp_sample_size`).

    Examples
    --------
    >>> from ldp.specs.multiattr import MultiAttribute
    >>> spec = MultiAttribute(
    ...     [{"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "win"]},
    ...      {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 1000}],
    ...     epsilon=1.0,
    ... )
    >>> spec.names, spec.sample, [a.epsilon for a in spec.attributes]
    (('os', 'ms'), 1, [1.0, 1.0])
    """

    mechanism: ClassVar[str] = "multi-attribute"
    report_kind: ClassVar[str] = "record"
    #: ``names`` is held in the JSON form by each attribute's object (its ``name``).
    json_omitted: ClassVar[frozenset[str]] = frozenset({"names"})

    epsilon: float
    method: str
    sample: int
    names: tuple[str, ...]
    attributes: tuple[Spec, ...]

    def __init__(
        self,
        attributes: Sequence[Any],
        epsilon: float,
        method: str = "smp",
        sample: int | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(epsilon))
        mode = str(method).strip().lower()
        if mode not in MULTI_ATTRIBUTE_METHODS:
            raise SpecError(
                f"multi-attribute: method must be one of {MULTI_ATTRIBUTE_METHODS}, got {method!r}"
            )
        object.__setattr__(self, "method", mode)
        if isinstance(attributes, (str, bytes, Mapping)) or not isinstance(attributes, Sequence):
            raise SpecError("multi-attribute: attributes must be a list of attribute objects")
        templates = [_attribute_template(item, i) for i, item in enumerate(attributes)]
        if names is not None and tuple(names) != tuple(n for n, _ in templates):
            raise SpecError("multi-attribute: 'names' must match the attributes' names")
        d = len(templates)
        if d < 2:
            raise SpecError(f"multi-attribute: give at least two attributes, got {d}")
        seen = [n for n, _ in templates]
        if len(set(seen)) != d:
            raise SpecError(f"multi-attribute: attribute names must be distinct, got {', '.join(seen)}")
        if mode == "smp":
            k = smp_sample_size(self.epsilon, d) if sample is None else check_int(sample, "sample", minimum=1)
            if k > d:
                raise SpecError(f"multi-attribute: sample ({k}) cannot exceed the {d} attributes")
        else:
            if sample is not None and check_int(sample, "sample", minimum=1) != 1 and mode in RSFD_METHODS:
                raise SpecError(f"multi-attribute: {mode} samples exactly one attribute (sample=1)")
            if sample is not None and mode == "spl" and check_int(sample, "sample", minimum=1) != d:
                raise SpecError(f"multi-attribute: spl reports every attribute (sample={d})")
            k = d if mode == "spl" else 1
        object.__setattr__(self, "sample", k)
        object.__setattr__(self, "names", tuple(seen))
        share = self.epsilon / k
        specs = tuple(self._attribute_spec(name, data, share) for name, data in templates)
        object.__setattr__(self, "attributes", specs)
        self._check_claim()
        self.report_schema  # noqa: B018  # declares the record's field names, so its reports parse

    # -- construction ----------------------------------------------------------------
    def _attribute_spec(self, name: str, data: dict[str, Any], share: float) -> Spec:
        stored = "epsilon" in data
        if not stored:
            data = {**data, "epsilon": share}
        try:
            spec = load_spec(data)
        except SpecError as error:
            raise SpecError(f"multi-attribute: attribute {name!r}: {error}") from None
        if not isinstance(spec, ExactPrivacySpec) or spec.memoized or getattr(spec, "delta", None):
            raise SpecError(
                f"multi-attribute: attribute {name!r} ({spec.mechanism}) must be a pure epsilon-LDP mechanism with "
                "fresh randomness per report and an exact probability ratio"
            )
        oracle = RSFD_METHODS.get(self.method, (spec.mechanism,))[0]
        if spec.mechanism != oracle:
            raise SpecError(
                f"multi-attribute: {self.method} takes {oracle.upper()} attributes; {name!r} is {spec.mechanism}"
            )
        if not stored and not ratio_within(spec.privacy_ratio, share):  # pragma: no cover - calibration bug
            raise SpecError(f"multi-attribute: attribute {name!r} exceeds its share epsilon={share!r}")
        return spec

    @classmethod
    def rsfd_amplified(
        cls, attributes: Sequence[Any], attribute_epsilon: float, method: str = "rsfd-grr"
    ) -> MultiAttribute:
        """RS+FD as the paper calibrates it: every oracle at ε′ = ln(d(e^ε − 1) + 1).

        ``attribute_epsilon`` (the paper's ε) then bounds records that differ
        in one attribute; the spec's ``epsilon``, any two records, is the
        certified ln of the exact record ratio (about ε′). For ``-r`` fake
        data the paper's ε′ gives an attribute-level ε above ε (module
        docstring): ε′ is then lowered (bisection on the exact ratio) to the
        largest value whose exact attribute-level ratio is within
        e^attribute_epsilon, so :attr:`attribute_epsilon` never exceeds it.

        Examples
        --------
        >>> from ldp.specs.multiattr import MultiAttribute
        >>> attrs = [{"name": c, "mechanism": "grr", "domain": ["x", "y", "z"]} for c in "abc"]
        >>> spec = MultiAttribute.rsfd_amplified(attrs, 1.0)
        >>> round(spec.epsilon, 4), round(spec.attribute_epsilon, 4)
        (1.8172, 1.0)
        """
        templates = [_attribute_template(item, i) for i, item in enumerate(attributes)]
        eps = check_epsilon(attribute_epsilon, "attribute_epsilon")
        mode = str(method).strip().lower()
        if mode not in RSFD_METHODS:
            raise SpecError(f"multi-attribute: rsfd_amplified takes an RS+FD method, got {method!r}")

        def probe(inner: float) -> MultiAttribute:
            parts = [{"name": name, **data, "epsilon": inner} for name, data in templates]
            return cls(parts, inner, method=mode)

        high = math.log(len(templates) * math.expm1(eps) + 1)
        spec = probe(high)
        if not ratio_within(spec.attribute_ratio, eps):
            low = eps  # at ε′ = ε the attribute-level ratio is below e^ε (fake data only dilutes)
            for _ in range(60):
                middle = (low + high) / 2
                if ratio_within(probe(middle).attribute_ratio, eps):
                    low = middle
                else:
                    high = middle
            spec = probe(low)
        parts = [
            {"name": name, **attribute.to_dict()}
            for name, attribute in zip(spec.names, spec.attributes, strict=True)
        ]
        for part in parts:
            part.pop("format", None)
        return cls(parts, epsilon_bound_of_ratio(spec.privacy_ratio), method=mode)

    # -- serialization ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("names", None)
        items = []
        for name, spec in zip(self.names, self.attributes, strict=True):
            data = spec.to_dict()
            data.pop("format", None)
            items.append({_NAME_KEY: name, **data})
        out["attributes"] = items
        return out

    # -- privacy ----------------------------------------------------------------------
    @property
    def rsfd(self) -> bool:
        """Whether the method is random sampling plus fake data (every attribute in every report)."""
        return self.method in RSFD_METHODS

    def rsfd_pairs(self, j: int, differ: bool) -> list[tuple[Fraction, Fraction]]:
        """The pairs (t_j(y, x_j), t_j(y, x′_j)) attribute j's outputs y give, exactly (module docstring).

        t_j = P_j(y | x)/F_j(y), F_j the fake distribution; ``differ``: x_j ≠ x′_j,
        else x_j = x′_j. Of each family of outputs only the extremes are
        listed, which are the only ones a ratio of sums can pick.
        """
        attribute = self.attributes[j]
        k = attribute.domain_size  # type: ignore[attr-defined]
        p, q = attribute.exact_p_star, attribute.exact_q_star  # type: ignore[attr-defined]
        fake = RSFD_METHODS[self.method][1]
        if fake == "uniform":  # t = k·P_j(y | x): k p where y = x, k q elsewhere
            high, low = k * p, k * q
            if not differ:
                return [(high, high), (low, low)]
            return [(high, low), (low, high)] + ([(low, low)] if k > 2 else [])
        alpha, beta = p / q, (1 - p) / (1 - q)  # P_j(y | x)/G(y) where bit x of y is 1, 0
        if fake == "zero":  # F_j = G, the zero vector's perturbation
            if not differ:
                return [(alpha, alpha), (beta, beta)]
            return [(alpha, beta), (beta, alpha), (alpha, alpha), (beta, beta)]
        # random: F_j = G·S(y)/k, S(y) = m·α + (k − m)·β for m bits set; t = k·r(y_x)/S(y)

        def t(one: bool, m: int) -> Fraction:
            return k * (alpha if one else beta) / (m * alpha + (k - m) * beta)

        if not differ:
            return [(t(True, m), t(True, m)) for m in (1, k)] + [
                (t(False, m), t(False, m)) for m in (0, k - 1)
            ]
        out = []
        for m in {1, k - 1}:
            out += [(t(True, m), t(False, m)), (t(False, m), t(True, m))]
        out += [(t(True, m), t(True, m)) for m in {2, k}]
        out += [(t(False, m), t(False, m)) for m in {0, k - 2}]
        return out

    @property
    def privacy_ratio(self) -> Fraction:
        """max over two records x, x′ and outputs of P[y|x]/P[y|x′], exactly (module docstring)."""
        if self.rsfd:
            return max_ratio_of_sums([self.rsfd_pairs(j, True) for j in range(self.dimension)])
        ratios = sorted((spec.privacy_ratio for spec in self.attributes), reverse=True)  # type: ignore[attr-defined]
        out = Fraction(1)
        for ratio in ratios[: self.sample]:
            out *= ratio
        return out

    @property
    def attribute_ratio(self) -> Fraction:
        """The exact worst ratio over records that differ in one attribute (≤ :attr:`privacy_ratio`)."""
        if not self.rsfd:
            return max(spec.privacy_ratio for spec in self.attributes)  # type: ignore[attr-defined]
        return max(
            max_ratio_of_sums([self.rsfd_pairs(i, i == j) for i in range(self.dimension)])
            for j in range(self.dimension)
        )

    @property
    def attribute_epsilon(self) -> float:
        """ln of :attr:`attribute_ratio`, rounded up: ε when neighbouring records differ in one attribute."""
        return epsilon_bound_of_ratio(self.attribute_ratio)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One record's report under the worst pair of records, for the accountant (:mod:`ldp.specs.pairs`).

        The worst pair differs in every attribute, each at its own worst pair.
        ``spl``: every attribute's pieces (independent reports). ``smp``: one
        piece, the mixture over the public subset S of k attributes (each
        with probability 1/C(d, k)) of the product of S's attributes'
        distributions; its largest log ratio is the sum of the k largest
        attribute ε, the exact ratio. RS+FD: binary randomized
        response at the exact ratio (the f_{ε,0} curve, which bounds every
        pair of an ε-LDP report).
        """
        if self.method == "spl":
            return tuple(p for spec in self.attributes for p in spec.report_pieces())  # type: ignore[attr-defined]
        if self.rsfd:
            ratio = self.privacy_ratio
            keep = ratio / (1 + ratio)
            return (piece([1 - keep, keep], [keep, 1 - keep]),)
        joint = [_joint_distribution(spec.report_pieces()) for spec in self.attributes]  # type: ignore[attr-defined]
        subsets = list(itertools.combinations(range(self.dimension), self.sample))
        size = sum(math.prod(joint[j][0].size for j in subset) for subset in subsets)
        if size > _MAX_PIECE_OUTPUTS:
            raise AccountingError(
                f"multi-attribute: the record's worst-pair distribution has {size:,} outputs "
                f"(more than {_MAX_PIECE_OUTPUTS:,}); the accountant has no curve for it"
            )
        weight = -math.log(len(subsets))
        log_p, log_q = [], []
        for subset in subsets:
            lp, lq = np.zeros(1), np.zeros(1)
            for j in subset:
                lp = np.add.outer(lp, joint[j][0]).ravel()
                lq = np.add.outer(lq, joint[j][1]).ravel()
            log_p.append(lp + weight)
            log_q.append(lq + weight)
        return (PrivacyPiece(np.concatenate(log_p), np.concatenate(log_q)),)

    def privacy_summary(self) -> dict[str, float]:
        return super().privacy_summary() | {"attribute_epsilon": self.attribute_epsilon}

    # -- helpers ----------------------------------------------------------------------
    @property
    def dimension(self) -> int:
        """d, the number of attributes."""
        return len(self.attributes)

    def attribute(self, name: str) -> Spec:
        """The spec of attribute ``name``."""
        try:
            return self.attributes[self.names.index(name)]
        except ValueError:
            raise SpecError(
                f"multi-attribute: no attribute {name!r} (attributes: {', '.join(self.names)})"
            ) from None

    # -- reports and inputs -----------------------------------------------------------------
    @staticmethod
    def field_name(index: int, field: str) -> str:
        """The record report's name of attribute ``index``'s field ``field``: ``a{index}_{field}``."""
        return f"a{index}_{field}"

    @functools.cached_property
    def report_schema(self) -> ReportSchema:  # per instance (ldp.report_schema)
        """The fields of a record report, which depend on the attributes (docs/multi-attribute.md#reports).

        ``smp``: ``sampled`` (d bits, exactly k set), then attribute j's own
        fields, renamed ``a{j}_{field}``, present exactly when bit j is set.
        ``spl`` and RS+FD: every attribute's fields, in every report.
        """
        from ldp.specs.subset import SubsetBits

        flags = SAMPLED_FIELD if self.method == "smp" else None
        fields: list[Any] = [SubsetBits(SAMPLED_FIELD, length="dimension", weight="sample")] if flags else []
        for j, attribute in enumerate(self.attributes):
            for inner in report_schema_of(attribute).fields:
                fields.append(
                    PartField(
                        self.field_name(j, inner.name), inner=inner, index=j, parts="attributes", flags=flags
                    )
                )
        return ReportSchema(tuple(fields))

    @property
    def input_columns(self) -> dict[str, Spec]:
        """The columns of an input table ``ldp encode`` reads (one per attribute, by name), each with its spec.

        A spec whose input is a record of several columns names them here;
        each row's value is then the mapping of these columns' cells.
        """
        return dict(zip(self.names, self.attributes, strict=True))

    def record(self, value: Any) -> tuple[Any, ...]:
        """One input record as a tuple in attribute order: a mapping by attribute name, or a sequence of d values.

        Raises
        ------
        InputError
            For a mapping without some attribute, or a sequence of another length.
        """
        if isinstance(value, Mapping):
            missing = [name for name in self.names if name not in value]
            if missing:
                raise InputError(
                    f"record has no {missing[0]!r} (the spec's attributes: {', '.join(self.names)})"
                )
            return tuple(value[name] for name in self.names)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise InputError(
                f"a multi-attribute input is a record (a mapping of {', '.join(self.names)}), "
                f"got {type(value).__name__}"
            )
        if len(value) != self.dimension:
            raise InputError(f"record has {len(value)} values, the spec {self.dimension} attributes")
        return tuple(value)

    def checked_record(self, value: Any) -> tuple[Any, ...]:
        """:meth:`record`, every attribute's value checked, sampled or not (a domain value, or a finite number).

        A user's record is refused whole when any of its values is bad, so
        whether a bad value is caught never depends on the sampled attributes.

        Raises
        ------
        InputError
            Naming the attribute.
        """
        from ldp.specs.numeric import check_numeric_value

        record = self.record(value)
        for name, attribute, item in zip(self.names, self.attributes, record, strict=True):
            try:
                if hasattr(attribute, "index_of"):
                    attribute.index_of(item)
                else:
                    check_numeric_value(item)
            except InputError as error:
                raise InputError(f"attribute {name!r}: {error}") from None
        return record

    # -- examples (the conformance suite: tests/conformance/mechanism_examples.py) ---------------
    @classmethod
    def example(cls, domain: Sequence[Any], epsilon: float) -> MultiAttribute:
        """A small spec of every kind of attribute: a categorical one over ``domain`` (GRR) and a number.

        The spec's parts are specs of their own, so its constructor needs
        more than a domain and ε: this is the example the conformance suite
        builds (``example`` of a composite spec class).
        """
        return cls(
            [
                {"name": "x", "mechanism": "grr", "domain": list(domain)},
                {"name": "y", "mechanism": "piecewise", "low": 0, "high": 1},
            ],
            epsilon,
        )

    def example_inputs(self, n: int) -> list[dict[str, Any]]:
        """``n`` records with unequal counts: categorical attributes cycle with the first value repeated."""
        out = []
        for i in range(n):
            row: dict[str, Any] = {}
            for j, (name, attribute) in enumerate(zip(self.names, self.attributes, strict=True)):
                domain = getattr(attribute, "domain", None)
                if domain is not None:
                    row[name] = domain[0] if (i + j) % 3 == 0 else domain[(i + j) % len(domain)]
                else:
                    low, high = float(attribute.low), float(attribute.high)  # type: ignore[attr-defined]
                    row[name] = low + (high - low) * (0.05 + 0.9 * ((i * 7 + j) % 11) / 10)
            out.append(row)
        return out
