"""Every engine's answers against native's: per work item, how many programs agree,
disagree or cannot be compared, with the differences the KoPL peers' rules bridge
tagged and the first few disagreements as examples.
"""

from __future__ import annotations

from collections import Counter


# ---- agreement -----------------------------------------------------------------------------------

def compare_answers(reference: dict, results: dict) -> None:
    """Set ``agreement`` on every result: per work item, how many programs agree with native."""
    from synkqa.benchmark.peers import ERROR

    ref_runs = reference.get("runs", {})
    for engine, result in results.items():
        if result.get("status") != "ok":
            continue
        agreement: dict[str, dict] = {}
        for key, run in result.get("runs", {}).items():
            ours = ref_runs.get(key, {}).get("answers", [])
            agreement[key] = _agree(engine, run, ours, ERROR)
        batch = result.get("batch") or {}
        ref_batch = reference.get("batch") or {}
        ref_answers = ref_batch.get("answers", [])
        if batch.get("answers") is not None:
            agreement["batch"] = _agree(engine, {"answers": batch["answers"],
                                                 "incomparable": batch.get("incomparable")}, ref_answers, ERROR)
        if batch.get("many_answers") is not None:
            agreement["batch execute_many"] = _agree(engine, {"answers": batch["many_answers"],
                                                              "incomparable": batch.get("many_incomparable")},
                                                     ref_batch.get("many_answers", ref_answers), ERROR)
        if batch.get("peer_answers") is not None:
            agreement["batch"] = _agree(engine, batch, ref_answers, ERROR)
        evtc, ref_evtc = result.get("evtc") or {}, reference.get("evtc") or {}
        if evtc.get("answers"):
            agreement["evtc"] = _agree(engine, evtc, ref_evtc.get("answers", []), ERROR)
        totals = Counter()
        for item in agreement.values():
            totals.update({k: v for k, v in item.items() if isinstance(v, int)})
        result["agreement"] = {"items": agreement, "total": dict(totals)}
        result["agrees"] = totals["disagree"] == 0


def _agree(engine: str, run: dict, ours: list[str], error: str) -> dict:
    """Counts of agree / disagree / not comparable, and the first few disagreements."""
    counts = {"compared": 0, "agree": 0, "disagree": 0, "not_comparable": 0}
    examples: list[str] = []
    tags: Counter = Counter()
    if "peer_answers" in run:
        finishes = run.get("finishes") or [None] * len(run["peer_answers"])
        incomparable = run.get("incomparable") or [None] * len(run["peer_answers"])
        for ref, theirs, finish, why in zip(ours, run["peer_answers"], finishes, incomparable):
            if theirs is None or why:
                counts["not_comparable"] += 1
                if why:
                    tags[f"not comparable: {why}"] += 1
                continue
            answer, tag = theirs
            expected = error if ref == "error" else ref
            same = answer == expected
            if engine == "kopl-engine":
                # It prints one string: one name of a set ("no" for an empty one, read back as
                # the empty set), which must be a member of ours; it cannot say "cannot answer".
                if ref == "error" or ref.startswith("type-error"):
                    counts["not_comparable"] += 1
                    tags["not comparable: ours raises, kopl-engine has no error answer"] += 1
                    continue
                if finish in ("names", "argmax"):
                    same = answer in ref.split("|") if ref else answer == ""
            counts["compared"] += 1
            if same:
                counts["agree"] += 1
                if tag:
                    tags[tag] += 1
            else:
                counts["disagree"] += 1
                if len(examples) < 5:
                    examples.append(f"ours {ref[:60]!r} vs {engine} {answer[:60]!r}")
    else:
        incomparable = run.get("incomparable") or [None] * len(run.get("answers", []))
        for ref, theirs, why in zip(ours, run.get("answers", []), incomparable):
            if why:
                counts["not_comparable"] += 1
                tags[f"not comparable: {why}"] += 1
                continue
            counts["compared"] += 1
            if ref == theirs:
                counts["agree"] += 1
            else:
                counts["disagree"] += 1
                if len(examples) < 5:
                    examples.append(f"ours {ref[:60]!r} vs {engine} {theirs[:60]!r}")
    if tags:
        counts["bridged"] = dict(tags)
    if examples:
        counts["examples"] = examples
    return counts
