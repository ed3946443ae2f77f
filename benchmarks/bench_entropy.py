"""Randomness economy of every registered mechanism's secure batch encoder.

For each mechanism in the registry (:func:`ldp.registry.declarations`, nothing
hand-listed) the benchmark builds a spec at d = ``--domain`` values (ε =
``--epsilon``; δ = 1e-5 where the constructor requires one; numeric
mechanisms on [0, 1]), encodes ``--reports`` users with the secure batch
encoder (:func:`ldp.client.secure_encode_batch`, every coin from
``os.urandom`` blocks) and prints:

- ``reports/s``: the secure batch encoder's rate (median of ``--repeat`` runs);
- ``B/report``: bytes it reads from the randomness source per report, counted
  through :class:`ldp.client.CountingSource` (the CSPRNG source, counting
  every word it hands out, in one untimed run);
- ``H B/report``: the entropy the mechanism needs per report, in bytes: the
  Shannon entropy of the report given the input (``--`` where no exact model
  is written below: continuous outputs, chained or multi-stage mechanisms);
- ``bytes ÷ H``: the first ratio (target ≤ 2);
- ``time ÷ urandom``: the encoder's time over the time ``os.urandom`` takes to
  read the same number of bytes, measured interleaved in the same run
  (target ≤ 3);
- ``÷ words``: the encoder's time over the same encoder's with the word
  samplers only (every draw in whole 8- to 64-bit units, as before the bit
  samplers of :mod:`ldp.client.bits`: :data:`~ldp.client.bits.ECONOMY_MIN_DRAWS`
  raised past the batch), interleaved in the same run: below 1 the bit
  samplers are faster; 1.00 where a mechanism does not use them. For subset
  selection it is the tree sampler's time over Floyd's batch (the word path).

The entropies are exact formulas of the spec's exact probabilities
(evaluated in double precision, so to about 1e-12 relative):

- randomized response over d outputs (keep p, each other q):
  −p log2 p − (d−1) q log2 q;
- unary encoding: h(p) + (d−1) h(q), h the binary entropy;
- subset selection (ω of d): h(p) + p log2 C(d−1, ω−1) + (1−p) log2 C(d−1, ω);
- local hashing: log2 |seed space| (a uniform hash seed) + randomized response over g;
- Hadamard response (K outputs, b/2 in C_x): h(p) + p log2(b/2) + (1−p) log2(K − b/2);
- RAPPOR, a fresh client: log2 m (the cohort) + h·h(P[1|1]) + (k−h)·h(P[1|0]),
  for a value whose h Bloom positions are distinct;
- CMS (k rows, m bits): log2 k + h(p) + (m − 1) h(q);
- HCMS (k rows, m columns): log2 k + log2 m + h(p);
- PEM and TreeHist (r rounds): log2 r + log2 |seed space| + randomized response over g;
- range-haar (h levels): log2 h + (h − 1)/2 (the index below 2^l, l uniform) + h(p);
- the unary longitudinal chains (l-oue, l-sue, l-osue), a fresh client, whose
  bits are independent with P[1] = a (the value's) or b (``spec.support``):
  h(a) + (d − 1) h(b);
- range-hierarchy (h levels, level l of w_l bits): log2 h + the mean over
  levels of h(p) + (w_l − 1) h(q);
- dBitFlip (d of b buckets, sent coins 1 w.p. p′ where the bucket holds the
  value, q′ elsewhere), a fresh client: log2 C(b, d) + (d/b)(h(p′) + (d − 1) h(q′))
  + (1 − d/b) d h(q′);
- PCKV-UE (d′ padded keys): h(a) + a·h(p) + (d′ − 1)(h(b) + b), the
  perturbation's entropy only (the sampled pair and v* are left out), so a
  lower bound and its ratio an upper bound;
- PCKV-GRR, the same way: h(a) + a·h(p) + (1 − a)(log2(d′ − 1) + 1);
- PrivKVM (d keys), v* left out: log2 d + h(p1) + h(p2);
- l-grr, a fresh client: one randomized response of the chain's composite
  probabilities (a, b); LOLOHA, a fresh client: log2 |pool| + two
  randomized responses over g (the memo, then the report);
- multi-attribute, sampling (smp: k of d attributes): log2 C(d, k) + (k/d)
  times the sum of the attributes' entropies (on the benchmark's records);
- the numeric mechanisms and 1BitMean, averaged over the benchmark's inputs:
  the grid rounding coin's h(frac) and the output's draws
  (:func:`numeric_entropy_bits`).

One-hot coins (the unary family) are measured on the path a long-running
process takes with ``ldp-telemetry[fast]`` installed: the compiled kernel of
:mod:`ldp.client.onehot` (its compile is in the untimed counting call); the
``÷ words`` column times the word samplers and the bit-sliced lanes in the
same run. Without numba the header says the lanes are measured.

Run it on one core: ``OPENBLAS_NUM_THREADS=1`` is set before NumPy loads.

Usage::

    python benchmarks/bench_entropy.py
    python benchmarks/bench_entropy.py --reports 20000 --repeat 5 --only oue,sue,ss,hr
    python benchmarks/bench_entropy.py --only rappor --rappor f=1/2,p=1/3,q=3/4

``--rappor`` changes the benchmark's RAPPOR parameters (:data:`RAPPOR`). Under
the default policy (:func:`ldp.client.onehot.serves_marked_batch`) its default
f = 1/2, p = 1/4, q = 3/4 (P[1|1] = 5/8, P[1|0] = 3/8: they sum to 1, and the
bit-sliced lanes read 3 digits a coin), p = 1/3 (31/48 and 7/16: not dyadic,
about 7.5 digits a coin) and p = 1/2 (11/16 and 9/16: 4 digits, each marked bit
corrected by a further coin) are drawn by
:func:`ldp.client.marked_correction.corrected_coins`, and so is f = 1/2,
p = 1/2, q = 1 (7/8 and 5/8: 3 digits) and f = 0, p = 1/4, q = 1/2 (1/2 and 1/4:
2 digits, each marked bit corrected).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import inspect
import math
import statistics
from fractions import Fraction
from typing import Any

import numpy as np
from harness import timings

import ldp.client.bits as bit_samplers
import ldp.client.onehot as onehot
from ldp.client import CountingSource, SystemRandomSource, secure_encode_batch
from ldp.errors import ParameterError
from ldp.hashing import LH_SEED_SPACE
from ldp.registry import MechanismDeclaration, declarations

#: RAPPOR has no required parameters: the benchmark's Bloom filter (k bits, h hashes, m cohorts, f, p, q).
RAPPOR = {"num_bits": 128, "num_hashes": 2, "num_cohorts": 64, "f": "1/2", "p": "1/4", "q": "3/4"}


def plogp(p: Fraction | float) -> float:
    """−p log2 p (0 at p = 0)."""
    p = float(p)
    return 0.0 if p <= 0 else -p * math.log2(p)


def binary_entropy(p: Fraction | float) -> float:
    """h(p) in bits."""
    return plogp(p) + plogp(1 - float(p))


def log2_binomial(n: int, k: int) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def numeric_entropy_bits(spec: Any, values: Any) -> float:
    """The mean over ``values`` of the entropy of a numeric report's draws (bits).

    The input's rounding coin on the grid (h of the fractional part of u·K, u
    the value's position in [0, 1]; K = 1 for the two-point mechanisms and
    1BitMean), then the output: the keep coin h(p) (two-point; 1BitMean's γ
    flip h(γ) too), the table row's entropy (PM band rows and noise cells
    alike for every row), Hybrid's h(α) + α·(PM row) + (1 − α)·(its Duchi
    part: the side coin of t_i, h(i/K) for each rounding, and h(p)).
    """
    u = (np.asarray(spec.to_native(values), dtype=np.float64) + 1.0) / 2.0
    table = getattr(spec, "table", None)
    grid = 1 if table is None else table.K
    position = u * grid
    frac = position - np.floor(position)
    rounding = float(np.mean([binary_entropy(f) for f in frac]))
    if table is None:  # Duchi, stochastic rounding, 1BitMean: the rounded side kept with p (then γ)
        return rounding + binary_entropy(spec.p) + binary_entropy(getattr(spec, "gamma", 0) or 0)
    weights = table.row(0 if table.kind == "rows" else table.K).astype(np.float64) / table.total
    if table.kind == "shift":
        weights = np.diff(np.asarray(table.cumulative, dtype=np.float64), prepend=0.0) / table.total
    row = float(sum(plogp(w) for w in weights))
    if spec.mechanism != "hybrid":
        return rounding + row
    alpha, duchi = float(spec.alpha), spec.duchi
    low = np.floor(position)
    side = np.mean(
        [
            (1 - f) * binary_entropy(i / grid) + f * binary_entropy(min(i + 1, grid) / grid)
            for i, f in zip(low, frac)
        ]
    )
    return (
        rounding + binary_entropy(alpha) + alpha * row + (1 - alpha) * (float(side) + binary_entropy(duchi.p))
    )


def entropy_bits(spec: Any, values: Any = None) -> float | None:
    """Shannon entropy (bits) of one report given the input, or None where no model is written.

    Numeric mechanisms depend on the input: their model averages over ``values`` (:func:`numeric_entropy_bits`).
    """
    kind = spec.report_kind
    if kind == "numeric" and values is not None:
        return numeric_entropy_bits(spec, values)
    if spec.mechanism == "multi-attribute" and spec.method == "smp" and values is not None:
        # k of the d attributes uniformly, then each sampled attribute's report (each sampled w.p. k/d)
        d, k = spec.dimension, spec.sample
        records = [spec.record(v) for v in values]
        parts = [entropy_bits(attr, [r[j] for r in records]) for j, attr in enumerate(spec.attributes)]
        if any(part is None for part in parts):
            return None
        return log2_binomial(d, k) + k / d * sum(parts)
    if kind == "rappor":
        h, k = spec.num_hashes, spec.num_bits
        if spec.encoding != "bloom":
            h = 1 if spec.encoding == "basic" else min(h, 1)
        return (
            math.log2(spec.num_cohorts)
            + h * binary_entropy(spec.prob_one_given_one)
            + (k - h) * binary_entropy(spec.prob_one_given_zero)
        )
    if spec.mechanism == "cms":
        return math.log2(spec.k) + binary_entropy(spec.p) + (spec.m - 1) * binary_entropy(spec.q)
    if spec.mechanism == "hcms":  # a uniform row and column, then the sign kept with p
        return math.log2(spec.k) + math.log2(spec.m) + binary_entropy(spec.p)
    if kind == "prefix-hashed":  # PEM, TreeHist: a uniform round and hash seed, then GRR over g buckets
        return (
            math.log2(spec.num_rounds)
            + math.log2(LH_SEED_SPACE)
            + plogp(spec.p)
            + (spec.g - 1) * plogp(spec.q)
        )
    if spec.mechanism == "range-haar":  # a uniform level l and index below 2^l, then the sign kept with p
        return math.log2(spec.levels) + (spec.levels - 1) / 2 + binary_entropy(spec.p)
    if spec.mechanism == "range-hierarchy":
        per_level = [
            binary_entropy(spec.p) + (spec.level_width(level) - 1) * binary_entropy(spec.q)
            for level in range(1, spec.levels + 1)
        ]
        return math.log2(spec.levels) + sum(per_level) / len(per_level)
    if spec.mechanism == "pckv-ue":  # the perturbation only: a lower bound (the sampled pair and v* left out)
        a, b = float(spec.a), float(spec.b)
        return (
            binary_entropy(a) + a * binary_entropy(spec.p) + (spec.padded_size - 1) * (binary_entropy(b) + b)
        )
    if spec.mechanism == "dbitflip":  # a fresh client: d uniform buckets of b, then d sent coins
        b, d, held = spec.domain_size, spec.d, spec.d / spec.domain_size  # held: x among the sampled buckets
        coin_bits = held * (binary_entropy(spec.sent_one) + (d - 1) * binary_entropy(spec.sent_zero))
        return log2_binomial(b, d) + coin_bits + (1 - held) * d * binary_entropy(spec.sent_zero)
    if spec.mechanism == "pckv-grr":  # the perturbation only, as PCKV-UE: a lower bound
        a = float(spec.a)
        return (
            binary_entropy(a) + a * binary_entropy(spec.p) + (1 - a) * (math.log2(spec.padded_size - 1) + 1)
        )
    if spec.mechanism == "privkvm":  # a uniform key, the presence and sign coins (v* left out): a lower bound
        return math.log2(spec.domain_size) + binary_entropy(spec.p1) + binary_entropy(spec.p2)
    if spec.mechanism == "l-grr":  # a fresh client: one draw of the chain's composite support (a, b)
        a, b = spec.support
        return plogp(a) + (spec.domain_size - 1) * plogp(b)
    if (
        spec.mechanism == "loloha"
    ):  # a fresh client: a uniform pool seed, then GRR over g twice (memo, report)
        return (
            math.log2(spec.pool_size)
            + plogp(spec.p1)
            + (spec.g - 1) * plogp(spec.q1)
            + plogp(spec.p2)
            + (spec.g - 1) * plogp(spec.q2)
        )
    if hasattr(spec, "p1") and hasattr(spec, "support") and kind == "bits":
        a, b = (
            spec.support
        )  # a fresh client of a unary chain: each bit 1 w.p. a (the value's) or b, independently
        return binary_entropy(a) + (spec.domain_size - 1) * binary_entropy(b)
    if hasattr(spec, "p1"):
        return None  # other chained (memoized, then fresh) mechanisms: no model here
    d = getattr(spec, "domain_size", None)
    if kind == "value" and d is not None:
        return plogp(spec.p) + (d - 1) * plogp(spec.q)
    if kind == "bits" and hasattr(spec, "omega"):
        w, p = spec.omega, spec.p
        return (
            binary_entropy(p)
            + float(p) * log2_binomial(d - 1, w - 1)
            + (1 - float(p)) * log2_binomial(d - 1, w)
        )
    if kind == "bits" and hasattr(spec, "q") and not hasattr(spec, "gamma"):
        return binary_entropy(spec.p) + (d - 1) * binary_entropy(spec.q)
    if kind == "hashed" and hasattr(spec, "q") and hasattr(spec, "g"):
        return math.log2(LH_SEED_SPACE) + plogp(spec.p) + (spec.g - 1) * plogp(spec.q)
    if kind == "output" and hasattr(spec, "block_size"):
        half, p = spec.block_size // 2, spec.p
        return (
            binary_entropy(p) + float(p) * math.log2(half) + (1 - float(p)) * math.log2(spec.outputs - half)
        )
    return None


def build_spec(decl: MechanismDeclaration, domain: int, epsilon: float) -> Any:
    """The benchmark's spec of ``decl``: its required parameters filled (domain, ε, δ)."""
    cls = decl.load_spec()
    if hasattr(
        cls, "example"
    ):  # a composite spec (records): its own example, as the conformance suite builds
        return cls.example(tuple(range(domain)), epsilon)
    params = inspect.signature(cls).parameters
    given = {"domain": tuple(range(domain)), "epsilon": epsilon, "delta": 1e-5}
    kwargs = {n: given[n] for n, p in params.items() if p.default is p.empty and n in given}
    try:
        return cls(**kwargs)
    except ParameterError:
        if "domain" in kwargs:  # a mechanism of a two-value domain (binary RR)
            return cls(**{**kwargs, "domain": (0, 1)})
        return cls(**{**kwargs, **{n: v for n, v in RAPPOR.items() if n in params}})


def inputs(spec: Any, n: int) -> tuple[Any, bool]:
    """(``n`` input values, whether they are domain indices) for ``spec``."""
    if spec.report_kind == "numeric":
        return np.linspace(0.05, 0.95, n), False
    if hasattr(spec, "example_inputs"):
        return list(spec.example_inputs(n)), False
    domain = getattr(spec, "domain", None)
    if domain is None:
        return [f"u{i % 100}" for i in range(n)], False
    return np.arange(n, dtype=np.int64) % len(domain), True


def measure(decl: MechanismDeclaration, args: argparse.Namespace) -> tuple[Any, ...]:
    spec = build_spec(decl, args.domain, args.epsilon)
    values, indices = inputs(spec, args.reports)
    counting = CountingSource()
    secure_encode_batch(spec, values, indices=indices, source=counting)
    nbytes = counting.bytes
    source = SystemRandomSource()
    encode_secs, urandom_secs, word_secs = [], [], []

    def words_only() -> None:
        """The encoder with the word samplers only: no call draws enough values for bits, one-hot coins by lanes."""
        threshold, policy = bit_samplers.ECONOMY_MIN_DRAWS, onehot.SECURE_BATCH
        bit_samplers.ECONOMY_MIN_DRAWS, onehot.SECURE_BATCH = 1 << 62, "never"
        try:
            secure_encode_batch(spec, values, indices=indices, source=source)
        finally:
            bit_samplers.ECONOMY_MIN_DRAWS, onehot.SECURE_BATCH = threshold, policy

    for _ in range(args.repeat):  # interleaved: a change of load hits all alike
        encode_secs += timings(
            lambda: secure_encode_batch(spec, values, indices=indices, source=source), 1, warm_up=False
        )
        urandom_secs += timings(lambda: os.urandom(max(nbytes, 1)), 1, warm_up=False)
        word_secs += timings(words_only, 1, warm_up=False)
    encode, urandom = statistics.median(encode_secs), statistics.median(urandom_secs)
    words = statistics.median(word_secs)
    per_report = nbytes / args.reports
    entropy = entropy_bits(spec, values)
    entropy_bytes = None if entropy is None else entropy / 8
    return (
        decl.name,
        args.reports / encode,
        per_report,
        entropy_bytes,
        None if not entropy_bytes else per_report / entropy_bytes,
        encode / urandom,
        encode / words,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--domain", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument(
        "--only", default="", help="comma-separated mechanism names (default: all registered)"
    )
    parser.add_argument(
        "--rappor",
        default="",
        help=f"RAPPOR parameters, e.g. f=1/2,p=1/3,q=3/4 (default: {', '.join(f'{k}={v}' for k, v in RAPPOR.items())})",
    )
    args = parser.parse_args()
    for item in filter(None, args.rappor.split(",")):
        name, _, value = item.partition("=")
        if name not in RAPPOR or not value:
            parser.error(f"--rappor takes name=value pairs of {', '.join(RAPPOR)}, got {item!r}")
        RAPPOR[name] = int(value) if name.startswith("num_") else value
    only = {name for name in args.only.split(",") if name}
    # a long-running process's one-hot path: the compiled kernel as soon as a batch is large enough (ldp encode
    # loads it once a process has drawn onehot.KERNEL_AFTER reports; the counted first call compiles it, untimed)
    onehot.KERNEL_AFTER = 0
    one_hot_path = (
        "the compiled kernel" if onehot.serves_secure_batch(args.reports) else "the bit-sliced lanes"
    )
    header = (
        f"{'mechanism':<20} {'reports/s':>12} {'B/report':>10} {'H B/report':>11} {'bytes÷H':>8}"
        f" {'time÷urandom':>13} {'÷ words':>8}  result"
    )
    print(
        f"secure batch encoders, d = {args.domain}, ε = {args.epsilon}, {args.reports:,} reports, "
        f"median of {args.repeat}; one-hot coins by {one_hot_path}; "
        f"RAPPOR {', '.join(f'{k}={v}' for k, v in RAPPOR.items())}"
    )
    print(header)
    print("-" * len(header))
    for decl in declarations():
        if only and decl.name not in only:
            continue
        name, rate, per_report, entropy, ratio, time_ratio, word_ratio = measure(decl, args)
        verdict = "-" if ratio is None else ("PASS" if ratio <= 2 and time_ratio <= 3 else "MISS")
        print(
            f"{name:<20} {rate:>12,.0f} {per_report:>10.1f} "
            f"{'--' if entropy is None else f'{entropy:.1f}':>11} {'--' if ratio is None else f'{ratio:.2f}':>8}"
            f" {time_ratio:>13.2f} {word_ratio:>8.2f}  {verdict}"
        )
    print(
        "(targets: bytes ÷ H ≤ 2, time ÷ urandom ≤ 3; urandom: os.urandom of the same bytes, same run; "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )


if __name__ == "__main__":
    main()
