"""Figures 2–7 of the paper as PNG (matplotlib, Agg backend), ours beside the paper's.

Ours are solid bars or lines; the paper's are hatched bars or dashed lines in the same
colour. PNG metadata carries no timestamp, so the same results give the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ontology import paper  # noqa: E402

TC_COLOUR, EV_COLOUR = "#4C72B0", "#DD8452"
_META = {"Software": None}


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata=_META)
    plt.close(fig)
    return path


def _grouped_bars(ax, labels, series: list[tuple[str, list[float], str, bool]]) -> None:
    """``series``: (legend label, values, colour, is_paper)."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for i, (label, values, colour, is_paper) in enumerate(series):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width,
               label=label, color="white" if is_paper else colour, edgecolor=colour,
               hatch="///" if is_paper else None, linewidth=1.2)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([str(x) for x in labels])


def figure_2(example: dict[str, Any], path: Path) -> Path:
    """The example reasoning trace: our engine's steps beside the paper's Fig. 2."""
    ours = [f"Question: {example['question']}", "", f"KoPL: {example['program']}", "", "Steps:"]
    ours += [f"{i}. {step} -> {value}" for i, (step, value) in enumerate(example["steps"], start=1)]
    ours += ["", f"Final answer: {example['answer']}", f"(engine: {example['engine']})"]
    theirs = [f"Question: {paper.FIG_2['question']}", "", f"KoPL: {paper.FIG_2['program']}", "", "Steps:"]
    theirs += [f"{i}. {step} -> {value}" for i, (step, value)
               in enumerate(zip(paper.FIG_2["program"].split(";"), paper.FIG_2["steps"]), start=1)]
    theirs += ["", f"Final answer: {paper.FIG_2['answer']}"]
    fig, axes = plt.subplots(2, 1, figsize=(9.5, 6.2))
    for ax, title, lines in ((axes[0], "Ours (trace from the engine)", ours),
                             (axes[1], "Paper (Fig. 2)", theirs)):
        ax.axis("off")
        ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
        ax.text(0.0, 1.0, "\n".join(lines), family="monospace", fontsize=8.5, va="top", ha="left",
                transform=ax.transAxes)
    fig.suptitle("Fig. 2. Example 2-hop question, KoPL program and step-by-step executor trace",
                 fontsize=11)
    return _save(fig, path)


def _by_bucket(results: dict, key: str, metric: str, paper_rows: dict, paper_index: tuple[int, int],
               title: str, xlabel: str, ylabel: str, path: Path) -> Path:
    tc, ev = results["systems"]["tc"][key], results["systems"]["ev-tc"][key]
    labels = list(tc)

    def paper_value(bucket, idx):
        row = paper_rows.get(int(bucket) if str(bucket).isdigit() else bucket)
        return row[idx] if row else None

    series = [("TC (ours)", [tc[b][metric] for b in labels], TC_COLOUR, False),
              ("TC (paper)", [paper_value(b, paper_index[0]) for b in labels], TC_COLOUR, True),
              ("EV-TC (ours)", [ev[b][metric] for b in labels], EV_COLOUR, False),
              ("EV-TC (paper)", [paper_value(b, paper_index[1]) for b in labels], EV_COLOUR, True)]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    _grouped_bars(ax, labels, series)
    ax.set_ylim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend_below(ax)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _legend_below(ax) -> None:
    """Legend under the axes, so it never hides a bar."""
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)


def figure_3(results: dict, path: Path) -> Path:
    return _by_bucket(results, "by_hops", "accuracy", paper.TABLE_VI, (1, 3),
                      "Fig. 3. Answer accuracy versus hop count", "Hops", "Answer accuracy (%)", path)


def figure_4(results: dict, path: Path) -> Path:
    return _by_bucket(results, "by_hops", "program_em", paper.TABLE_VI, (2, 4),
                      "Fig. 4. Program exact match versus hop count", "Hops", "Program EM (%)", path)


def figure_5(results: dict, path: Path) -> Path:
    """Error types before and after execution validation (counts; log scale)."""
    def counts(errors: dict) -> dict:
        # The paper's "Correct" is answer-correct; wrong-program right answers are inside it.
        out = {"Correct (answer)": errors["Correct"] + errors["CorrectAnswerWrongProgram"]}
        out.update({k: v for k, v in errors.items() if k != "Correct"})
        return out

    tc = counts(results["systems"]["tc"]["errors"])
    ev = counts(results["systems"]["ev-tc"]["errors"])
    reported = {"Correct (answer)": paper.TABLE_VIII["Correct"], "CorrectAnswerWrongProgram": (0, 19),
                "WrongTemplate": paper.TABLE_VIII["WrongTemplate"], "SpuriousPass": paper.TABLE_VIII["SpuriousPass"]}
    labels = [name for name in tc if tc[name] or ev[name] or name in reported]
    pv = {name: reported.get(name, (None, None)) for name in labels}
    series = [("TC (ours)", [tc[n] for n in labels], TC_COLOUR, False),
              ("TC (paper)", [pv[n][0] for n in labels], TC_COLOUR, True),
              ("EV-TC (ours)", [ev[n] for n in labels], EV_COLOUR, False),
              ("EV-TC (paper)", [pv[n][1] for n in labels], EV_COLOUR, True)]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _grouped_bars(ax, labels, series)
    for container in ax.containers[0::2]:  # label our bars with their counts
        ax.bar_label(container, fontsize=7, padding=1)
    ax.set_yscale("symlog", linthresh=10)
    top = max([v for _, values, _, _ in series for v in values if v is not None] + [10])
    ax.set_ylim(0, top * 4)  # room for the count labels under the title
    ax.set_ylabel("Questions (symlog scale)")
    ax.set_title("Fig. 5. Error types before and after execution validation")
    ax.tick_params(axis="x", labelrotation=12)
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def figure_6(results: dict, path: Path) -> Path:
    """Top-k ablation: accuracy (left) and program EM (right) against k, ours and the paper's."""
    ks = [int(k) for k in results["ablation"]]
    pk = sorted(paper.TABLE_IX)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, metric, index, label in ((axes[0], "accuracy", 0, "Answer accuracy (%)"),
                                     (axes[1], "program_em", 1, "Program EM (%)")):
        ours = [results["ablation"][str(k)][metric] for k in ks]
        ax.plot(ks, ours, "o-", color=EV_COLOUR, label="EV-TC (ours)")
        ax.plot(pk, [paper.TABLE_IX[k][index] for k in pk], "s--", color=TC_COLOUR, mfc="white",
                label="EV-TC (paper)")
        for k, v in zip(ks, ours):
            ax.annotate(f"{v:.2f}", (k, v), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7)
        ax.set_xticks(sorted(set(ks) | set(pk)))
        ax.set_ylim(0, 108)
        ax.set_xlabel("k (candidates validated at most)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Fig. 6. EV-TC top-k ablation (k=1 is TC)")
    return _save(fig, path)


def figure_7(results: dict, path: Path) -> Path:
    return _by_bucket(results, "by_reasoning", "accuracy", paper.TABLE_VII, (1, 3),
                      "Fig. 7. Answer accuracy by reasoning type (TC vs. EV-TC)", "Reasoning type",
                      "Answer accuracy (%)", path)


def write_figures(results: dict, out_dir: Path, example: dict | None = None) -> list[Path]:
    """Every figure the results support, as ``out_dir/fig<N>_<name>.png``."""
    out = []
    if example is not None:
        out.append(figure_2(example, out_dir / "fig2_example_trace.png"))
    if "tc" in results["systems"] and "ev-tc" in results["systems"]:
        out.append(figure_3(results, out_dir / "fig3_accuracy_by_hop.png"))
        out.append(figure_4(results, out_dir / "fig4_em_by_hop.png"))
        out.append(figure_5(results, out_dir / "fig5_error_types.png"))
        out.append(figure_7(results, out_dir / "fig7_accuracy_by_reasoning.png"))
    if "ablation" in results:
        out.append(figure_6(results, out_dir / "fig6_topk_ablation.png"))
    return sorted(out)
