"""Tables I–XI of the paper, built from :func:`evaluation.runner.run_study` results, each
with the paper's numbers beside ours, as Markdown and JSON.

Ours are computed; the paper's come from :mod:`ontology.paper`. A paper cell the paper
does not report is ``None`` in JSON and ``–`` in Markdown. Timings are not in these tables
(they vary between runs): :func:`runtime_table` is written to its own file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ontology import paper
from parsers import registry
from synkqa.benchmark.templates import templates

DASH = "–"


@dataclass
class Table:
    """One report table: ``rows`` hold raw values (numbers, strings, ``None``)."""

    key: str
    number: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    digits: int = 2

    def markdown(self) -> str:
        """GitHub Markdown: title, the table, then the notes."""
        lines = [f"### Table {self.number}. {self.title}", "",
                 "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---:" if self._numeric(i) else "---" for i in range(len(self.columns))) + "|"]
        for row in self.rows:
            lines.append("| " + " | ".join(_cell(v, self.digits) for v in row) + " |")
        if self.notes:
            lines.append("")
            lines.extend(f"- {note}" for note in self.notes)
        return "\n".join(lines) + "\n"

    def _numeric(self, column: int) -> bool:
        """Right-align a column whose cells are all numbers (or empty)."""
        cells = [row[column] for row in self.rows if row[column] is not None]
        return bool(cells) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in cells)

    def to_json(self) -> dict[str, Any]:
        return {"table": self.number, "title": self.title, "columns": self.columns,
                "rows": [[_json_value(v) for v in row] for row in self.rows], "notes": self.notes}


def _cell(value: Any, digits: int = 2) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|")


def _json_value(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def _seed_std(results: dict, system: str) -> str | None:
    """``std acc / std EM`` over seeds when there are several seeds, else ``None``."""
    summary = results.get("seed_summary", {}).get(system)
    if not summary or len(results["config"]["seeds"]) < 2:
        return None
    return f"{summary['accuracy']['std']:.2f} / {summary['program_em']['std']:.2f}"


# ---- the tables ------------------------------------------------------------------------

def table_i(results: dict) -> Table:
    kb = results["kb"]
    p = paper.TABLE_I
    rows = [["Total entities", kb["entities"], p["entities"]],
            ["Persons", kb["Person"], p["Person"]],
            ["Cities", kb["City"], p["City"]],
            ["Countries", kb["Country"], p["Country"]],
            ["Organizations", kb["Organization"], p["Organization"]],
            ["Relation types", kb["relation_types"], p["relation_types"]],
            ["Relation edges", kb["relation_edges"], p["relation_edges"]],
            ["Attribute types", kb["attribute_types"], p["attribute_types"]],
            ["Attribute values", kb["attribute_values"], p["attribute_values"]]]
    rows += [[f"  {k.split(':', 1)[1]} edges", v, None] for k, v in kb.items() if k.startswith("edges:")]
    return Table("table_i", "I", "Knowledge base statistics (ours: SPARQL COUNT on the store)",
                 ["Item", "Ours", "Paper"], rows)


def table_ii(results: dict) -> Table:
    rows = []
    for split, ours in results["dataset"].items():
        p = paper.TABLE_II.get(split, {})
        rows.append([split.capitalize(), ours["questions"], p.get("questions"),
                     f"{ours['words_mean']:.2f} ± {ours['words_std']:.2f}",
                     f"{p['words_mean']:.2f} ± {p['words_std']:.2f}" if p else None,
                     ours["steps_mean"], p.get("steps_mean"), ours["unique_answers"], p.get("unique_answers")])
    return Table("table_ii", "II", "Dataset split statistics (mean ± std over questions)",
                 ["Split", "#Questions", "Paper", "Avg words", "Paper", "Avg steps", "Paper",
                  "Unique answers", "Paper"], rows)


def table_iii(results: dict) -> Table:
    test_counts = results["dataset"].get("test", {}).get("templates", {})
    rows = []
    for t in templates():
        ptrain, ptest = paper.TABLE_III[t.id]
        rows.append([t.id, t.name, t.reasoning, t.hops, t.train, t.test, ptrain, ptest, t.skeleton,
                     test_counts.get(str(t.id), 0), paper.TABLE_XI[t.id][0]])
    return Table("table_iii", "III", "Program templates (ours: full paraphrases; paper: short forms)",
                 ["ID", "Template", "Reasoning", "Hops", "Train paraphrase", "Test paraphrase",
                  "Paper train", "Paper test", "KoPL skeleton", "Test N", "Paper N"], rows,
                 ["The paper prints only short forms of its paraphrases; ours are full sentences "
                  "written after them (the test form of BirthCountry is the paper's Fig. 2 sentence)."])


def table_iv(results: dict) -> Table:
    k = results["config"]["k"]
    settings = {
        "random": "seeded by question id",
        "majority": "most frequent train template",
        "prototype": "TF-IDF 1–2 grams, entity type tokens, centroid cosine",
        "tc": "TF-IDF 1–2 grams + SGDClassifier(log_loss, alpha=1e-5, max_iter=30), seeds "
              + ",".join(str(s) for s in results["config"]["seeds"]),
        "ev-tc": f"k={k}, option-set validator, first passing, fallback rank 1; "
                 f"executor: {results['config']['backend']}",
        "oracle": "gold program executed",
    }
    rows = []
    for name in results["systems"]:
        spec = registry.get_spec(name)
        p = paper.TABLE_IV.get(name, (None, None))
        rows.append([spec.title, name, "Yes" if spec.predicts_program else "No", p[0], spec.description,
                     f"k={spec.default_k}" if spec.default_k else DASH, p[1],
                     "yes" if spec.needs_choices else "no", settings.get(name, "")])
    return Table("table_iv", "IV", "Systems and settings",
                 ["System", "CLI name", "Predicts program?", "Paper", "Description", "Default k", "Paper k",
                  "Needs options", "Our settings"], rows)


def table_v(results: dict) -> Table:
    rows = []
    summary = results.get("seed_summary", {})
    for name, m in results["systems"].items():
        spec = registry.get_spec(name)
        p = paper.TABLE_V.get(name, (None, None))
        acc = summary[name]["accuracy"]["mean"] if name in summary else m["overall"]["accuracy"]
        em = summary[name]["program_em"]["mean"] if name in summary else m["overall"]["program_em"]
        rows.append([spec.title, acc, p[0], em, p[1], _seed_std(results, name)])
    notes = [f"Test split, N = {next(iter(results['systems'].values()))['overall']['n']}."]
    if len(results["config"]["seeds"]) > 1 and summary:
        notes.append(f"TC and EV-TC: mean over seeds {results['config']['seeds']}, with the population "
                     "std of accuracy / EM (the paper reports 0.00: its three runs were identical).")
    return Table("table_v", "V", "Overall test performance (percent)",
                 ["Model", "Answer accuracy", "Paper", "Program EM", "Paper", "Seed std"], rows, notes)


def _bucket_table(results: dict, key: str, paper_rows: dict, label: str, number: str, title: str,
                  name_of=None) -> Table:
    tc, ev = results["systems"]["tc"][key], results["systems"]["ev-tc"][key]
    rows = []
    for bucket in tc:
        p = paper_rows.get(_paper_key(bucket), (None,) * 5)
        head = [bucket] if name_of is None else name_of(bucket)
        rows.append([*head, tc[bucket]["n"], p[0],
                     tc[bucket]["accuracy"], p[1], tc[bucket]["program_em"], p[2],
                     ev[bucket]["accuracy"], p[3], ev[bucket]["program_em"], p[4]])
    columns = ([label] if name_of is None else ["ID", "Template", "Reasoning", "Hops"]) + [
        "N", "Paper N", "TC Acc", "Paper", "TC EM", "Paper", "EV Acc", "Paper", "EV EM", "Paper"]
    return Table(f"table_{number.lower()}", number, title, columns, rows)


def _paper_key(bucket: Any) -> Any:
    return int(bucket) if isinstance(bucket, str) and bucket.isdigit() else bucket


def table_vi(results: dict) -> Table:
    return _bucket_table(results, "by_hops", paper.TABLE_VI, "Hops", "VI",
                         "Performance by hop count, test set (percent)")


def table_vii(results: dict) -> Table:
    return _bucket_table(results, "by_reasoning", paper.TABLE_VII, "Reasoning type", "VII",
                         "Performance by reasoning type, test set (percent)")


def table_viii(results: dict) -> Table:
    tc, ev = results["systems"]["tc"]["errors"], results["systems"]["ev-tc"]["errors"]
    p = paper.TABLE_VIII
    rows = [["Correct (answer)", tc["Correct"] + tc["CorrectAnswerWrongProgram"], p["Correct"][0],
             ev["Correct"] + ev["CorrectAnswerWrongProgram"], p["Correct"][1]],
            ["  of which CorrectAnswerWrongProgram", tc["CorrectAnswerWrongProgram"], 0,
             ev["CorrectAnswerWrongProgram"], 19]]
    for name in ("WrongTemplate", "SpuriousPass", "NoCandidatePassed", "SlotFillError", "ExecutionFailure"):
        pv = p.get(name, (None, None))
        rows.append([name, tc[name], pv[0], ev[name], pv[1]])
    return Table("table_viii", "VIII", "Error-type counts on the test set",
                 ["Outcome / error type", "TC", "Paper", "EV-TC", "Paper"], rows,
                 ["The paper's Correct counts right answers; its 19 BirthCountry questions answered "
                  "right by a wrong program (§3) are inside it, shown here as CorrectAnswerWrongProgram.",
                  "NoCandidatePassed: no top-k candidate passed validation and the rank-1 fallback was "
                  "wrong. SlotFillError: gold template, slots not fillable or filled differently. "
                  "ExecutionFailure: the gold program was selected but its answer differs (engine "
                  "fault). The paper reports none of these three."])


def table_ix(results: dict) -> Table:
    rows = []
    for k, m in results["ablation"].items():
        p = paper.TABLE_IX.get(int(k), (None, None))
        rows.append([int(k), m["accuracy"], p[0], m["program_em"], p[1], m["mean_examined"],
                     paper.TABLE_X["mean_executions"] if int(k) == 5 else None, m["mean_executions"]])
    return Table("table_ix", "IX", "EV-TC top-k ablation on the test set (percent)",
                 ["k", "Answer accuracy", "Paper", "Program EM", "Paper", "Candidates examined", "Paper",
                  "Programs executed"], rows,
                 ["k=1 is TC (validation cannot change a single candidate; the fallback is rank 1).",
                  "Candidates examined counts every candidate up to the selected one, as the paper's "
                  "'executed candidates' does; programs executed leaves out unfillable candidates, "
                  "which never reach the store."])


def table_x(results: dict) -> Table:
    ev = results["systems"]["ev-tc"]
    ranks = results["ranks"]
    rows = []
    for r, count in ev["selected_ranks"].items():
        label = "No candidate passed (fallback)" if r == "fallback" else f"Selected rank = {r}"
        rows.append([label, count, paper.TABLE_X["selected_ranks"].get(r, 0 if r == "fallback" else None)])
    rows.append([f"Avg candidates examined (k={results['config']['k']})", ev["mean_examined"],
                 paper.TABLE_X["mean_executions"]])
    rows.append(["Avg programs executed (unfillable skipped)", ev["mean_executions"], None])
    for r in range(1, results["config"]["k"] + 1):
        rows.append([f"Gold template at rank {r}", ranks["histogram"][str(r)], paper.GOLD_RANKS.get(str(r))])
    deeper = sum(v for key, v in ranks["histogram"].items()
                 if key == "none" or int(key) > results["config"]["k"])
    rows.append([f"Gold template below rank {results['config']['k']}", deeper, 0])
    rows.append(["Mean gold rank", ranks["mean_gold_rank"], paper.MEAN_GOLD_RANK])
    for k in ("1", "2", "3", "5"):
        if k in ranks["coverage"]:
            rows.append([f"Top-{k} coverage (%)", ranks["coverage"][k], paper.COVERAGE.get(k)])
    for outcome, n in ev.get("outcomes", {}).items():
        rows.append([f"Candidates {outcome}", n, None])
    return Table("table_x", "X", "Execution-validation rank statistics",
                 ["Item", "Ours", "Paper"], rows,
                 ["Runtime (TC and EV-TC ms/query) varies between runs and is reported in "
                  "runtime.md / runtime.json, not here.",
                  "Paper top-k coverage derived from its stated gold-rank distribution."])


def table_xi(results: dict) -> Table:
    names = {t.id: t for t in templates()}

    def name_of(bucket):
        t = names[int(bucket)]
        return [t.id, t.name, t.reasoning, t.hops]

    return _bucket_table(results, "by_template", paper.TABLE_XI, "Template", "XI",
                         "Per-template test performance (percent)", name_of=name_of)


TABLES = (table_i, table_ii, table_iii, table_iv, table_v, table_vi, table_vii, table_viii,
          table_ix, table_x, table_xi)


def build_tables(results: dict) -> list[Table]:
    """Every table the results support (TC/EV-TC tables need those systems to have run)."""
    out = []
    for make in TABLES:
        try:
            out.append(make(results))
        except KeyError:
            continue  # a reduced study (e.g. without EV-TC) has no data for this table
    return out


def runtime_table(results: dict) -> Table | None:
    """Per-question time of TC and EV-TC (varies between runs)."""
    rt = results.get("runtime")
    if not rt:
        return None
    p = paper.TABLE_X
    rows = [["TC time (ms/query)", rt["tc"]["ms_per_question"], p["tc_ms_per_question"]],
            ["  ranking (TF-IDF + classifier)", rt["tc"]["rank_ms_per_question"], None],
            ["  slot filling + execution", rt["tc"]["exec_ms_per_question"], None],
            ["EV-TC time (ms/query)", rt["ev-tc"]["ms_per_question"], p["ev_tc_ms_per_question"]],
            ["  ranking (TF-IDF + classifier)", rt["ev-tc"]["rank_ms_per_question"], None],
            ["  slot filling + execution + validation", rt["ev-tc"]["exec_ms_per_question"], None],
            ["EV-TC / TC", rt["ratio"], p["ev_tc_ms_per_question"] / p["tc_ms_per_question"]],
            ["Programs executed per question, TC", rt["tc"]["executions_per_question"], None],
            ["Programs executed per question, EV-TC", rt["ev-tc"]["executions_per_question"], None]]
    native = rt.get("native")
    if native:
        rows += [[f"TC time, {native['backend']} engine (ms/query)", native["tc"]["ms_per_question"],
                  p["tc_ms_per_question"]],
                 [f"EV-TC time, {native['backend']} engine (ms/query)", native["ev-tc"]["ms_per_question"],
                  p["ev_tc_ms_per_question"]],
                 [f"EV-TC / TC, {native['backend']} engine", native["ratio"],
                  p["ev_tc_ms_per_question"] / p["tc_ms_per_question"]]]
    cross = results.get("cross_engine")
    agree = ([f"The same questions were also run on the native interpreter (an in-process engine like the "
              f"paper's): {cross['tc_disagreements']} TC and {cross['ev_tc_disagreements']} EV-TC "
              f"predictions differ from {cross['engines'][0]}'s (programs, answers and every candidate's "
              "outcome compared)."] if cross else [])
    return Table("runtime", "X (runtime)", "Per-question runtime on CPU (varies between runs)",
                 ["Item", "Ours", "Paper"], rows,
                 [f"{rt['questions']} test questions, executor: {rt['backend']}, no memo; both systems "
                  "timed back to back in the same process after a warm-up, from question text to answer.",
                  "The paper's executor is a Python dict interpreter; ours runs each program as one "
                  "SPARQL query on the embedded Oxigraph store (parse, type check, compile, query).",
                  *agree],
                 digits=3)


def write_tables(tables: list[Table], out_dir: Path, extra: dict[str, dict[str, Any]] | None = None,
                 sort_keys: bool = False) -> list[Path]:
    """``out_dir/<key>.md`` and ``<key>.json`` per table; returns the paths written.

    :param extra: per table key, fields added to its JSON (the raw data behind the table).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        md, js = out_dir / f"{table.key}.md", out_dir / f"{table.key}.json"
        md.write_text(table.markdown(), encoding="utf-8")
        payload = {**table.to_json(), **(extra or {}).get(table.key, {})}
        js.write_text(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n",
                      encoding="utf-8")
        written += [md, js]
    return written


# ---- SUMMARY.md --------------------------------------------------------------------------

def _f(x: float | None) -> str:
    return DASH if x is None else f"{x:.2f}"


def _template_name(tid: Any) -> str:
    if tid is None:
        return "(none)"
    return templates()[int(tid)].name


def summary_markdown(results: dict, tables: list[Table], files: list[Path]) -> str:
    """Where and why our numbers differ from the paper's, from the results (deterministic)."""
    cfg, systems = results["config"], results["systems"]
    lines = ["# SynKQA-Pro reproduction: summary", "",
             f"Produced by `synkqa reproduce` on {cfg['data']}, TC seeds {cfg['seeds']}, EV-TC k={cfg['k']}, "
             f"executor `{cfg['backend']}`. Every number below is recomputed on each run and is identical "
             "on a rerun, except the timings in `runtime.md`.", ""]

    v = next((t for t in tables if t.number == "V"), None)
    if v is not None:
        lines += ["## Headline (Table V)", "", v.markdown().split("\n", 2)[2], ""]

    lines += ["## Where our numbers differ from the paper's, and why", ""]
    bullets: list[str] = []

    kb = results["kb"]
    same_kb = all(kb[key] == value for key, value in paper.TABLE_I.items())
    ex = results.get("example")
    trace = (f" For example {ex['program'].split(';')[0][5:-1]} is born in {ex['steps'][1][1]}, "
             f"located in {ex['answer']} (paper: {paper.FIG_2['steps'][1]}, {paper.FIG_2['answer']}).") if ex else ""
    bullets.append(
        "**KB (Table I).** " + ("Every count matches the paper (counted with SPARQL on the store). "
                                if same_kb else "Counts differ from the paper's; see Table I. ")
        + "The random draws behind them do not: our generator is not the paper's unpublished code, so "
          "which person is born where differs." + trace)

    ds = results["dataset"]
    words = ", ".join(f"{split} {ds[split]['words_mean']:.2f} (paper {paper.TABLE_II[split]['words_mean']:.2f})"
                      for split in ds if split in paper.TABLE_II)
    uniq = ", ".join(f"{split} {ds[split]['unique_answers']} (paper {paper.TABLE_II[split]['unique_answers']})"
                     for split in ds if split in paper.TABLE_II)
    bullets.append(
        f"**Dataset (Table II).** Average words: {words}. Unique answers: {uniq}. The paper prints only "
        "short forms of its paraphrases (Table III), so ours are full sentences written after them; "
        "lengths, and everything a lexical model does with them, follow from that choice. Unique "
        "answers depend on the KB draws and on how VerifyEmployment and numeric answers are distributed.")

    if "tc" in systems:
        tc = systems["tc"]
        diffs = []
        for tid, m in tc["by_template"].items():
            pv = paper.TABLE_XI.get(int(tid))
            if pv and abs(m["accuracy"] - pv[1]) > 5:
                diffs.append(f"{_template_name(tid)} {m['accuracy']:.2f} (paper {pv[1]:.2f})")
        wrong = [c for c in tc["confusions"] if c["error"] == "WrongTemplate"][:4]
        mistaken = "; ".join(f"{_template_name(c['gold'])} read as {_template_name(c['predicted'])} "
                             f"({c['count']})" for c in wrong)
        bullets.append(
            f"**TC (Tables V–VII, XI).** Ours {tc['overall']['accuracy']:.2f} % accuracy / "
            f"{tc['overall']['program_em']:.2f} % EM against the paper's 43.27 / 43.27. TC's top-1 on the "
            "test split is decided by how each test paraphrase's n-grams overlap the *train* paraphrases, "
            "since the classifier never sees a test form; with different sentences, different templates "
            "fail. " + (f"Per template, where we differ by more than 5 points: {'; '.join(diffs)}. " if diffs else
                         "Per template our TC succeeds and fails where the paper's does. ")
            + (f"Most frequent confusions: {mistaken}." if mistaken else ""))

    if "ranks" in results:
        r = results["ranks"]
        hist = ", ".join(f"rank {k}: {n}" for k, n in r["histogram"].items() if n)
        bullets.append(
            f"**Gold-template ranks (Table X).** Ours: {hist}; mean {_f(r['mean_gold_rank'])}, top-5 coverage "
            f"{r['coverage'].get('5', 0):.2f} %. Paper: rank 1: 4327, rank 3: 3207, rank 4: 1467, rank 5: 999 "
            "(never rank 2), mean 2.48, top-5 coverage 100 %. The shape of this distribution is what the "
            "k ablation (Table IX) follows: accuracy at k equals the questions whose gold template is within "
            "the top k, minus spurious passes.")

    if "ev-tc" in systems:
        ev = systems["ev-tc"]
        errs = ev["errors"]
        spurious = [c for c in ev["confusions"] if c["error"] in ("SpuriousPass", "CorrectAnswerWrongProgram")]
        detail = "; ".join(f"{c['count']} {_template_name(c['gold'])} questions answered by "
                           f"{_template_name(c['predicted'])} ({c['error']})" for c in spurious[:6])
        bullets.append(
            f"**EV-TC (Tables V, VIII, X).** Ours {ev['overall']['accuracy']:.2f} % / {ev['overall']['program_em']:.2f} % "
            f"examining {ev['mean_examined']:.2f} candidates per question (paper 98.85 / 98.66, 2.47, which is "
            f"exactly its mean selected rank), of which {ev['mean_executions']:.2f} are executed: a candidate "
            "template the question cannot fill never reaches the store. "
            f"Spurious passes: {errs['SpuriousPass']} (paper 115, all BirthCountry); right answer from a "
            f"wrong program: {errs['CorrectAnswerWrongProgram']} (paper 19); no candidate passed: "
            f"{errs['NoCandidatePassed']}. " + (f"Where: {detail}. " if detail else "")
            + "A spurious pass needs a wrong template ranked above the gold one whose answer has the gold "
              "answer's type and happens to be one of the nine distractors, so its count depends on the "
              "ranking (paraphrases) and on how distractors are drawn (uniformly from the same class here; "
              "the paper's sampler is unpublished).")

    if "ablation" in results:
        ab = results["ablation"]
        parts = ", ".join(f"k={k}: {m['accuracy']:.2f} (paper {_f(paper.TABLE_IX.get(int(k), (None,))[0])})"
                          for k, m in ab.items())
        bullets.append(f"**Top-k ablation (Table IX).** Accuracy {parts}. Where the gold template sits "
                       "in the ranking differs (above), so the k at which EV-TC saturates differs too.")

    base = [f"{name} {systems[name]['overall']['accuracy']:.2f} / {systems[name]['overall']['program_em']:.2f} "
            f"(paper {paper.TABLE_V[name][0]:.2f} / {paper.TABLE_V[name][1]:.2f})"
            for name in ("random", "majority", "prototype", "oracle") if name in systems]
    if base:
        bullets.append(
            f"**Baselines (Table V), accuracy / EM.** {'; '.join(base)}. RandomChoice is chance (10 %) "
            "up to sampling noise. MajorityTemplate predicts the most frequent training template "
            f"(ours: {results.get('majority_template', '?')}; the paper's must be BirthCountry, weight 0.15, "
            "as its EM of 15.02 is BirthCountry's 1502/10000 test share); its accuracy is a little above its "
            "EM because some other questions share the majority program's answer. "
            "PrototypeRetrieval depends on the paraphrases as TC does.")

    if "seeds" in results:
        per = results["seeds"]
        same = len({(round(s["tc"]["accuracy"], 6), round(s["ev-tc"]["accuracy"], 6),
                     round(s["tc"]["program_em"], 6), round(s["ev-tc"]["program_em"], 6)) for s in per.values()}) == 1
        seeds_text = "; ".join(f"seed {s}: TC {m['tc']['accuracy']:.2f}, EV-TC {m['ev-tc']['accuracy']:.2f}"
                               for s, m in per.items())
        bullets.append(
            f"**Seeds.** {seeds_text}. " + ("All seeds give identical metrics (std 0.00), as in the paper."
                                            if same else "Seeds differ slightly (the paper reports std 0.00).")
            + (" The seeds' top-k rankings are identical." if results.get("seeds_identical_rankings")
               else " The seeds' top-k rankings differ on some questions."))

    bullets.append(
        "**Runtime (runtime.md).** Not in the deterministic files. The paper's executor is a Python dict "
        "interpreter; ours answers each candidate with one SPARQL query on the embedded Oxigraph store "
        "(parse, type check, compile to SPARQL, query), so per-question times are larger in absolute "
        "terms; the EV-TC / TC ratio is the comparable figure (paper 0.243 / 0.159 = 1.53).")
    bullets.append(
        "**The paper's own inconsistencies** (its tables are used for comparison): Table IX gives 43.46 % "
        "at k=2 where the text says 44.61 %; Table X selects rank 2 for 134 questions while the text says "
        "the gold template is never ranked second (both are true: those 134 are the BirthCountry spurious "
        "and wrong-program passes); Table VII gives verify 99.90 % for TC where the text says 99.59 %.")

    lines += [f"- {b}" for b in bullets]
    lines += ["", "## Files", ""]
    lines += [f"- `{f}`" for f in sorted(str(p) for p in files)]
    return "\n".join(lines) + "\n"
