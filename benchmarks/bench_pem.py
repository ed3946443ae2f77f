"""PEM on a real-world string distribution: top-k precision, frequency error and time, against OLH given the domain.

The population: English word frequencies from the ``wordfreq`` package
(the ``bench`` extra; its data is CC-BY-SA), the ``--vocabulary`` most
frequent words of at most ``--max-length`` bytes of UTF-8, renormalized;
n users are drawn from it (seeded). Each row is one collection at ε:

* ``pem``: ``ldp.PEM(epsilon, max_length, top_k=k, eta)`` (default width
  4·k), the batch encoder (seeded coins) and the accumulator's search on
  all the reports (``estimate(held_out=False)``), with no candidates;
  ``pem-held-out``: the same reports through the default
  ``estimate()`` (part of each group searches, the rest estimates: what
  ``ldp aggregate`` and ``ldp simulate`` output), one row per
  ``--held-out-share`` (``ho 0.25`` and so on; the default share when
  omitted); ``pem-paper``: the paper's search on the same kind of
  reports, ``width=k`` (only the top k prefixes survive a middle round) and
  ``pool=False`` (each round's estimates from its own group only);
  ``treehist`` (``--mechanism pem treehist``): ``ldp.TreeHist(epsilon,
  max_length, top_k=k)`` the same way;
* ``olh (known domain)``, the same-run reference: OLH over the
  ``--olh-domain`` most frequent words plus one catch-all value for the
  rest, i.e. what a frequency oracle achieves when the candidates are known
  in advance; its top k are the k largest estimates.

Columns: precision of the top k (share of the output values that are true
top-k words; 0 when nothing is output), recall (share of the true top k
output), mse of the true top-k words' frequencies (an undiscovered word
estimates 0), and seconds (encode + aggregate). ``ratio`` columns divide
PEM's figure by the reference's of the same run. One collection per cell
(noisy: ``--repeats`` for more).

Usage::

    pip install -e ".[bench]"
    python benchmarks/bench_pem.py                       # n = 1,000,000, eps 1 2 4, k 10 20
    python benchmarks/bench_pem.py --users 100000 --epsilon 2 --top-k 10 --mechanism pem pem-paper treehist
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.pem import heavy_hitter_table, pem_search
from ldp.client import encode_batch


def population(vocabulary: int, max_length: int) -> tuple[list[str], np.ndarray]:
    """The words and their probabilities (most frequent first)."""
    from wordfreq import top_n_list, word_frequency

    words = [
        w for w in top_n_list("en", vocabulary) if len(w.encode("utf-8")) <= max_length and "\x00" not in w
    ]
    weights = np.array([word_frequency(w, "en") for w in words])
    return words, weights / weights.sum()


def _top_metrics(
    found: dict[str, float], truth: dict[str, float], true_top: list[str]
) -> tuple[float, float, float]:
    """(precision of the output set against the true top k (0 when empty), its recall, mse of the true top k)."""
    hits = sum(1 for w in found if w in set(true_top))
    mse = float(np.mean([(found.get(w, 0.0) - truth[w]) ** 2 for w in true_top]))
    return hits / max(len(found), 1), hits / len(true_top), mse


def run_pem(values, epsilon, max_length, k, eta, rng, mechanism="pem", share=None):
    if mechanism in ("pem", "pem-held-out"):
        spec = ldp.PEM(epsilon=epsilon, max_length=max_length, top_k=k, eta=eta)
    elif mechanism == "pem-paper":  # the paper's search: the top k prefixes survive, one group estimates
        spec = ldp.PEM(epsilon=epsilon, max_length=max_length, top_k=k, eta=eta, width=k)
    else:
        spec = ldp.TreeHist(epsilon=epsilon, max_length=max_length, top_k=k)
    start = time.perf_counter()
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, values, rng))
    if mechanism == "pem-paper":
        final = pem_search(spec, acc.groups(), pool=False)[-1]
        table = heavy_hitter_table(spec, final, acc.n, 0.95)
    elif mechanism == "pem":  # the search on all the reports (the held-out default searches half of them)
        table = acc.estimate(held_out=False)
    elif mechanism == "pem-held-out":  # the default: selection and estimates on disjoint parts
        table = acc.estimate() if share is None else acc.estimate(held_out_share=share)
    else:
        table = acc.estimate()
    seconds = time.perf_counter() - start
    return dict(zip(table["value"], table["proportion"], strict=True)), seconds, spec.num_rounds


def run_olh(values, words, epsilon, k, rng):
    other = "\x00other"
    spec = ldp.OLH(domain=[*words, other], epsilon=epsilon)
    known = set(words)
    start = time.perf_counter()
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, [v if v in known else other for v in values], rng))
    table = acc.estimate()
    seconds = time.perf_counter() - start
    table = table[table["value"] != other].nlargest(k, "proportion")
    return dict(zip(table["value"], table["proportion"], strict=True)), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    parser.add_argument("--top-k", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--max-length", type=int, default=8)
    parser.add_argument("--eta", type=int, default=4)
    parser.add_argument("--vocabulary", type=int, default=20_000)
    parser.add_argument("--olh-domain", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--held-out-share", type=float, nargs="+", default=[None])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--mechanism", nargs="+", default=["pem"], choices=["pem", "pem-held-out", "pem-paper", "treehist"]
    )
    args = parser.parse_args()

    words, probs = population(args.vocabulary, args.max_length)
    rng = np.random.default_rng(args.seed)
    print(
        f"wordfreq English, {len(words):,} words of <= {args.max_length} bytes, n = {args.users:,}, "
        f"eta = {args.eta}, OLH reference over the top {args.olh_domain:,} words + other, {args.repeats} repeat(s)"
    )
    header = (
        f"{'mechanism':>12} {'eps':>4} {'k':>3} {'rounds':>6} | {'prec':>5} {'recall':>6} {'olh prec':>8} | {'mse':>9} {'olh mse':>9} "
        f"{'ratio':>7} | {'s':>6} {'olh s':>6} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    rows = [
        (m, share)
        for m in args.mechanism
        for share in (args.held_out_share if m == "pem-held-out" else [None])
    ]
    for mechanism, share in rows:
        label = mechanism if share is None else f"ho {share:g}"
        for epsilon in args.epsilon:
            for k in args.top_k:
                cells = []
                for _ in range(args.repeats):
                    counts = rng.multinomial(args.users, probs)
                    order = np.repeat(np.arange(len(words)), counts)
                    rng.shuffle(order)
                    values = np.array(words, dtype=object)[order]
                    truth = {w: c / args.users for w, c in zip(words, counts.tolist(), strict=True)}
                    true_top = [words[i] for i in np.argsort(-counts, kind="stable")[:k]]
                    pem_found, pem_s, rounds = run_pem(
                        values, epsilon, args.max_length, k, args.eta, rng, mechanism, share
                    )
                    olh_found, olh_s = run_olh(values, words[: args.olh_domain], epsilon, k, rng)
                    cells.append(
                        (
                            *_top_metrics(pem_found, truth, true_top),
                            pem_s,
                            *_top_metrics(olh_found, truth, true_top),
                            olh_s,
                        )
                    )
                pp, pr, pm, ps, op, _, om, os_ = np.mean(cells, axis=0)
                print(
                    f"{label:>12} {epsilon:>4g} {k:>3} {rounds:>6} | {pp:>5.2f} {pr:>6.2f} {op:>8.2f} | {pm:>9.2e} {om:>9.2e} {pm / om:>7.1f} | "
                    f"{ps:>6.1f} {os_:>6.1f} {ps / os_:>6.2f}"
                )


if __name__ == "__main__":
    main()
