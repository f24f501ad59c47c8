"""The pages of ``synkqa serve`` in a real browser (Chromium driven by Playwright's sync API).

Each test does what a user does: types a program with completion, sees a misspelt relation
underlined with its did-you-mean, fixes it, runs it, clicks the steps of the graph, pages
through a large step, opens the compiled SPARQL in the query page, asks a question, and
reloads a shared link. Screenshots go to tests/artifacts/ (docs/img/ holds copies).

The browser is Debian's Chromium (/usr/bin/chromium): without it the module is skipped, or
fails when CI=true. The first question trains the parser (about a minute on a fresh cache),
so it is asked in the background as soon as the server is up and the question test runs last.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.web_server import start_server

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
QUESTION = "Which country was Person_00371 born in?"
FIRST = "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"
LARGE = "Find(Country_062);RelateInv(located_in);RelateInv(born_in)"     # 58 people
ASK_SECONDS = 240


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run on CI: {reason}")
    pytest.skip(f"BROWSER TESTS SKIPPED: {reason}")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def warm_question(served):
    """The example question, asked once in the background so that the model is trained while
    the other tests run."""
    outcome: dict = {}

    def ask() -> None:
        request = urllib.request.Request(served.url + "/api/ask", data=json.dumps({"question": QUESTION}).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=ASK_SECONDS) as response:
                outcome["answer"] = json.load(response)
        except Exception as exc:          # reported by the question test
            outcome["error"] = exc

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread, outcome


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    page.goto(url)
    return context, page


@pytest.fixture
def visit(browser, served, warm_question):
    """visit(path) → a page of a fresh browser context at the workbench (restored from the URL)."""
    opened = []

    def go(path: str = "/", base: str | None = None):
        context, page = _open(browser, (base or served.url) + path)
        opened.append((context, page))
        if path.startswith("/query"):
            page.wait_for_selector("body[data-ready]")
        else:
            page.wait_for_selector("body[data-ready=restored]")
        return page

    yield go
    for context, page in opened:
        errors = page.js_errors
        context.close()
        assert not errors, f"JavaScript errors: {errors}"


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def _run(page, start, answer: str) -> None:
    """Start a run (``start()``: a click, Ctrl+Enter, …), wait until its result is drawn and
    check the answer."""
    from playwright.sync_api import expect
    before = int(page.evaluate("document.body.dataset.runs || '0'"))
    start()
    page.wait_for_function(f"Number(document.body.dataset.runs || 0) > {before}")
    expect(page.locator("#answer")).to_contain_text(answer)
    expect(page.locator("#run")).to_be_enabled()


# ---- the workbench ---------------------------------------------------------------------------

def test_complete_underline_fix_run_and_read_a_step(visit):
    from playwright.sync_api import expect
    page = visit("/")
    editor = page.locator("#program")
    editor.click()
    editor.press_sequentially("Find(Person_0037")
    choice = page.locator("#completions li", has_text="Person_00371")
    expect(choice).to_be_visible()
    expect(page.locator("#completion-signature")).to_contain_text("entity")
    choice.click()
    expect(editor).to_have_value("Find(Person_00371")
    expect(page.locator("#completion-popup")).to_be_hidden()
    editor.press_sequentially(");Relate(birthplace);Relate(located_in);QueryName()")

    # the type error: message with the did-you-mean, the culprit underlined in the editor
    status = page.locator("#check-status")
    expect(status).to_contain_text("unknown relation 'birthplace'; did you mean born_in?")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    expect(page.locator("#editor-backdrop mark.error")).to_have_text("birthplace")
    _shot(page, "workbench-error.png")

    page.locator("#quick-fix").click()
    expect(editor).to_have_value(FIRST)
    expect(status).to_contain_text("well-typed: 4 steps")
    expect(page.locator("#editor-backdrop mark.error")).to_have_count(0)
    expect(page.locator("#graph .node")).to_have_count(4)

    _run(page, lambda: editor.press("Control+Enter"), "Country_062")
    badge = page.locator("#cross-check-badge")
    expect(badge).to_have_class(re.compile(r"\bagree\b"))
    expect(badge).to_contain_text("oxigraph agrees")
    assert "Country_062" in badge.get_attribute("title")
    expect(page.locator("#timings")).to_contain_text("total")
    expect(page.locator("#answer-kind")).to_have_text("entities")
    expect(page.locator("#sparql")).to_contain_text("SELECT")

    page.locator('#graph .node[data-step="2"]').click()
    expect(page.locator('#graph .node[data-step="2"]')).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#step-title")).to_have_text("Step 2 · Relate(born_in)")
    expect(page.locator("#step-meta")).to_contain_text("entities · 1 item · input: step 1")
    expect(page.locator("#step-items li")).to_have_text(["City_0359"])
    expect(page.locator("#editor-backdrop mark.step")).to_have_text("Relate(born_in)")
    assert "step=2" in page.url and "run=1" in page.url
    _shot(page, "workbench-run.png")


def test_keyboard_completion_and_the_graph_of_two_branches(visit):
    from playwright.sync_api import expect
    page = visit("/")
    editor = page.locator("#program")
    editor.click()
    editor.press_sequentially("Find(Org_0122);RelateInv(wor")
    expect(page.locator("#completions li").first).to_have_text(re.compile("works_at"))
    editor.press("Tab")
    editor.press_sequentially(");Find(City_0359);RelateInv(born_in);")
    # at a step's start every function is offered; typing narrows the list
    expect(page.locator("#completions li").first).to_be_visible()
    editor.press_sequentially("O")
    expect(page.locator("#completions li")).to_have_count(1)
    editor.press("Escape")
    expect(page.locator("#completion-popup")).to_be_hidden()
    editor.press("Backspace")
    editor.press_sequentially("A")
    items = page.locator("#completions li")
    expect(items).to_have_count(3)                  # Argmax, Argmin, And (the language's order)
    selected = page.locator("#completions li[aria-selected=true]")
    expect(selected).to_have_attribute("data-value", "Argmax")
    editor.press("ArrowUp")                         # wraps round to the last
    expect(selected).to_have_attribute("data-value", "And")
    editor.press("ArrowDown")
    expect(selected).to_have_attribute("data-value", "Argmax")
    editor.press("ArrowDown")
    editor.press("ArrowDown")
    expect(selected).to_have_attribute("data-value", "And")
    editor.press("Enter")                           # And takes no arguments: "And()" is inserted
    editor.press_sequentially(";Count()")
    expect(editor).to_have_value("Find(Org_0122);RelateInv(works_at);Find(City_0359);RelateInv(born_in);And();Count()")
    expect(page.locator("#check-status")).to_contain_text("well-typed: 6 steps")

    _run(page, page.locator("#run").click, "1")
    expect(page.locator("#cross-check-badge")).to_have_class(re.compile(r"\bagree\b"))
    # the two branches side by side on one row, both feeding And
    boxes = {n: page.locator(f'#graph .node[data-step="{n}"]').bounding_box() for n in range(1, 7)}
    assert boxes[2]["y"] == boxes[4]["y"] and boxes[2]["x"] + boxes[2]["width"] <= boxes[4]["x"]
    assert boxes[1]["y"] == boxes[3]["y"] < boxes[2]["y"] < boxes[5]["y"] < boxes[6]["y"]
    assert boxes[2]["x"] < boxes[5]["x"] + boxes[5]["width"] / 2 < boxes[4]["x"] + boxes[4]["width"]
    edges = page.locator("#graph path.edge")
    expect(edges).to_have_count(5)
    assert sorted(e.get_attribute("data-from") for e in page.locator('#graph path.edge[data-to="5"]').all()) == ["2", "4"]
    page.locator('#graph .node[data-step="5"]').click()
    expect(page.locator("#step-meta")).to_contain_text("input: step 2, step 4")
    expect(page.locator("#step-items li")).to_have_text(["Person_00371"])
    page.locator('#graph .node[data-step="6"]').click()
    expect(page.locator("#step-value")).to_have_text("1")          # a number, shown plainly
    # keyboard on the graph: focus a node, Enter selects it
    page.locator('#graph .node[data-step="4"]').focus()
    page.keyboard.press("Enter")
    expect(page.locator("#step-meta")).to_contain_text("6 items")
    _shot(page, "workbench-branches.png")


def test_page_through_a_large_step(visit):
    from playwright.sync_api import expect
    page = visit("/")
    editor = page.locator("#program")
    editor.fill(LARGE)
    expect(page.locator("#check-status")).to_contain_text("well-typed: 3 steps")
    _run(page, page.locator("#run").click, "Person_00371")
    page.locator('#graph .node[data-step="3"]').click()
    expect(page.locator("#step-meta")).to_contain_text("58 items")
    expect(page.locator("#step-range")).to_have_text("1–20 of 58")
    expect(page.locator("#step-items li")).to_have_count(20)
    expect(page.locator("#step-prev")).to_be_disabled()
    first_page = page.locator("#step-items li").all_inner_texts()
    page.locator("#step-next").click()
    expect(page.locator("#step-range")).to_have_text("21–40 of 58")
    assert page.locator("#step-items").get_attribute("start") == "21"
    second_page = page.locator("#step-items li").all_inner_texts()
    assert len(second_page) == 20 and not set(first_page) & set(second_page)
    page.locator("#step-next").click()
    expect(page.locator("#step-range")).to_have_text("41–58 of 58")
    expect(page.locator("#step-items li")).to_have_count(18)
    expect(page.locator("#step-next")).to_be_disabled()
    page.locator("#step-prev").click()
    expect(page.locator("#step-items li")).to_have_text(second_page)
    # a number in a step is shown plainly, not as a list
    editor.fill("Find(City_0359);RelateInv(born_in);FilterNum(height_cm,>,190);Count()")
    _run(page, lambda: editor.press("Control+Enter"), "1")
    expect(page.locator("#answer")).to_have_text("1")
    page.locator('#graph .node[data-step="4"]').click()
    expect(page.locator("#step-value")).to_have_text("1")
    expect(page.locator("#step-items")).to_be_hidden()


def test_compiled_sparql_runs_in_the_query_page(visit):
    from playwright.sync_api import expect
    page = visit("/")
    page.locator("#program").fill(LARGE)
    _run(page, page.locator("#run").click, "Person_00371")
    answer = page.locator("#answer .chip").all_inner_texts()
    assert len(answer) == 58
    sparql = page.locator("#sparql").inner_text()
    assert "SELECT DISTINCT ?person" in sparql and "ske:Country_062" in sparql
    page.locator("#open-query").click()
    page.wait_for_url(re.compile(r"/query#query="))
    page.wait_for_selector("body[data-ready]")
    expect(page.locator("#query")).to_have_value(re.compile(r"SELECT DISTINCT \?person WHERE \{\s+"
                                                            r"\?city sk:located_in ske:Country_062"))
    page.locator("#run-query").click()
    expect(page.locator("#query-status")).to_contain_text("58 rows")
    expect(page.locator("#results thead th")).to_have_text(["#", "?person"])
    cells = page.locator("#results tbody td:nth-child(2)")
    expect(cells).to_have_count(58)
    assert sorted(c.removeprefix("ske:") for c in cells.all_inner_texts()) == sorted(answer)
    first = cells.first
    assert first.get_attribute("title") == "http://synkqa.org/entity/" + first.inner_text().removeprefix("ske:")
    expect(page.locator("#truncated")).to_be_hidden()
    assert "run=1" in page.url
    _shot(page, "query-page.png")
    # back to the workbench: its state came back from the URL (and it ran again)
    page.go_back()
    page.wait_for_selector("body[data-ready=restored]")
    expect(page.locator("#program")).to_have_value(LARGE)
    expect(page.locator("#answer .chip")).to_have_count(58)


def test_query_page_prefixes_formats_truncation_and_errors(visit):
    from playwright.sync_api import expect
    page = visit("/query")
    query = page.locator("#query")
    expect(query).to_have_value(re.compile(r"^PREFIX .*\nPREFIX sk: <http://synkqa.org/ontology#>", re.S))
    assert "PREFIX ske: <http://synkqa.org/entity/>" in query.input_value()
    assert "SELECT" in query.input_value()
    page.locator("#run-query").click()
    expect(page.locator("#query-status")).to_contain_text("20 rows")
    expect(page.locator("#results tbody tr")).to_have_count(20)

    query.fill("PREFIX sk: <http://synkqa.org/ontology#>\n"
               "SELECT ?person WHERE { ?person sk:born_in <http://synkqa.org/entity/City_0359> } ORDER BY ?person")
    page.locator("#format").select_option("csv")
    query.press("Control+Enter")
    expect(page.locator("#raw")).to_contain_text(re.compile(r"person\s+http://synkqa.org/entity/Person_00371\s"))
    expect(page.locator("#results-wrap")).to_be_hidden()
    expect(page.locator("#query-status")).to_contain_text("6 rows · text/csv")
    assert "format=csv" in page.url

    page.locator("#format").select_option("json")
    query.fill("SELECT * WHERE { ?s ?p ?o }")
    page.locator("#run-query").click()
    truncated = page.locator("#truncated")
    expect(truncated).to_be_visible(timeout=30_000)
    expect(truncated).to_contain_text("at most 10,000 rows")
    expect(page.locator("#query-status")).to_contain_text("10,000 rows")
    expect(page.locator("#results-note")).to_contain_text("first 2,000 of 10,000")

    query.fill("ASK { ?s ?p ?o }")
    page.locator("#run-query").click()
    expect(page.locator("#boolean-answer")).to_have_text("true")
    expect(truncated).to_be_hidden()

    query.fill("SELECT * WHERE { ?s ?p }")
    page.locator("#run-query").click()
    error = page.locator("#query-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("syntax error (400)")
    query.fill("INSERT DATA { <http://a> <http://b> <http://c> }")
    page.locator("#run-query").click()
    expect(error).to_contain_text("refused (403)")
    # the query page's state is in its URL too
    page.reload()
    page.wait_for_selector("body[data-ready]")
    expect(query).to_have_value("INSERT DATA { <http://a> <http://b> <http://c> }")


def test_a_shared_link_restores_the_state(visit, served):
    from playwright.sync_api import expect
    link = ("/#program=" + FIRST + "&backend=oxigraph&step=2&q=" + QUESTION.replace(" ", "%20") + "&run=1")
    page = visit(link)
    expect(page.locator("#program")).to_have_value(FIRST)
    expect(page.locator("#backend")).to_have_value("oxigraph")
    expect(page.locator("#question")).to_have_value(QUESTION)
    expect(page.locator("#answer")).to_have_text("Country_062")
    expect(page.locator("#cross-check-badge")).to_contain_text("native agrees")
    expect(page.locator('#graph .node[data-step="2"]')).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#step-items li")).to_have_text(["City_0359"])

    # change the state by hand, then reload: the URL carries it
    page.locator('#graph .node[data-step="3"]').click()
    page.locator("#backend").select_option("native")
    page.locator("#cross-check").uncheck()
    expect(page).to_have_url(re.compile(r"step=3"))
    page.reload()
    page.wait_for_selector("body[data-ready=restored]")
    expect(page.locator("#backend")).to_have_value("native")
    expect(page.locator("#cross-check")).not_to_be_checked()
    expect(page.locator("#answer")).to_have_text("Country_062")
    expect(page.locator("#cross-check-badge")).to_be_hidden()
    expect(page.locator("#step-items li")).to_have_text(["Country_062"])

    # the same link in another browser context (someone it was shared with)
    shared = page.url[len(served.url):]
    other = visit(shared)
    expect(other.locator("#program")).to_have_value(FIRST)
    expect(other.locator("#step-title")).to_have_text("Step 3 · Relate(located_in)")
    expect(other.locator("#step-items li")).to_have_text(["Country_062"])

    # an edited program is no longer "run": the result is marked stale and run=1 leaves the URL
    other.locator("#program").press("End")
    other.locator("#program").press_sequentially(";Count()")
    expect(other.locator("#stale-note")).to_be_visible()
    expect(other).not_to_have_url(re.compile(r"run=1"))


def test_a_kqapro_kb_full_kopl_completion_json_and_no_questions(visit, browser, tmp_path_factory):
    """On a KB in KQA Pro's model: 27 functions, names with spaces (quoted when they must be),
    KQA Pro JSON programs, and the question box switched off with a note."""
    from playwright.sync_api import expect

    from kqapro.generator import generate
    from kqapro.kb import KB
    from kqapro.rdf import kb_to_turtle
    folder = tmp_path_factory.mktemp("kqapro-web")
    turtle = folder / "kb.ttl"
    turtle.write_bytes(kb_to_turtle(KB.from_json(generate(scale=0.02, seed=3))))
    server = start_server(folder, "--kb", str(turtle), "--timeout", "5")
    try:
        page = visit("/", base=server.url)
        expect(page.locator("#question")).to_be_disabled()
        expect(page.locator("#question-note")).to_contain_text("SynKQA-Pro KB only")
        editor = page.locator("#program")
        editor.click()
        editor.press_sequentially("FindAll();FilterCon")
        expect(page.locator("#completions li").first).to_have_text(re.compile("^FilterConcept"))
        editor.press("Enter")                       # "FilterConcept(" and the concepts are offered
        expect(page.locator("#completion-signature")).to_contain_text("FilterConcept: concept")
        editor.press_sequentially("huma")
        expect(page.locator("#completions li").first).to_have_text(re.compile("^human"))
        editor.press("Enter")
        editor.press_sequentially(");Count()")
        expect(editor).to_have_value("FindAll();FilterConcept(human);Count()")
        expect(page.locator("#check-status")).to_contain_text("well-typed: 3 steps")

        # a name with a comma is written as a JSON string
        editor.fill("")
        editor.press_sequentially("Find(Blue Letter")
        page.locator("#completions li", has_text="Blue Letter, Savage Letter").click()
        expect(editor).to_have_value('Find("Blue Letter, Savage Letter"')

        # a misspelt relation in the text form: underlined, fixed with the suggestion
        editor.fill("Find(Amy Dubois);Relate(capitol, forward);What()")
        expect(page.locator("#check-status")).to_contain_text("did you mean capital?")
        expect(page.locator("#editor-backdrop mark.error")).to_have_text("capitol")
        page.locator("#quick-fix").click()
        expect(editor).to_have_value("Find(Amy Dubois);Relate(capital, forward);What()")

        # KQA Pro JSON: two branches joined by Or
        program = [{"function": "FindAll", "inputs": [], "dependencies": []},
                   {"function": "FilterConcept", "inputs": ["human"], "dependencies": [0]},
                   {"function": "FindAll", "inputs": [], "dependencies": []},
                   {"function": "FilterConcept", "inputs": ["city"], "dependencies": [2]},
                   {"function": "Or", "inputs": [], "dependencies": [1, 3]},
                   {"function": "Count", "inputs": [], "dependencies": [4]}]
        editor.fill(json.dumps(program, indent=1))
        expect(page.locator("#check-status")).to_contain_text("well-typed: 6 steps")
        _run(page, lambda: editor.press("Control+Enter"), "160")
        expect(page.locator("#answer-kind")).to_have_text("count")
        expect(page.locator("#cross-check-badge")).to_have_class(re.compile(r"\bagree\b"))
        expect(page.locator('#graph path.edge[data-to="5"]')).to_have_count(2)
        page.locator('#graph .node[data-step="2"]').click()
        expect(page.locator("#step-meta")).to_contain_text("entities")
        page.locator("#tidy").click()
        expect(editor).to_have_value(re.compile(r"^FindAll\(\);FilterConcept\(human\);FindAll\(\);"))
    finally:
        server.stop()


# ---- questions (last: the model is trained while the tests above run) ------------------------

def test_ask_a_question_then_edit_and_run_the_chosen_program(visit, warm_question):
    from playwright.sync_api import expect
    thread, outcome = warm_question
    page = visit("/")
    page.locator("#question").fill(QUESTION)
    page.locator("#ask").click()
    thread.join(ASK_SECONDS)
    assert "error" not in outcome, f"the background question failed: {outcome.get('error')}"
    chosen = page.locator("#candidates tr.chosen")
    expect(chosen).to_be_visible(timeout=ASK_SECONDS * 1000)
    expect(page.locator("#ask-progress")).to_be_hidden()
    expect(page.locator("#chosen-program")).to_have_text(FIRST)
    expect(page.locator("#ask-summary")).to_contain_text("answer: Country_062")
    expect(chosen.locator("td").nth(1)).to_have_text(FIRST)
    expect(chosen.locator("td").nth(4)).to_have_text("passed")
    rows = page.locator("#candidates tbody tr")
    ranks = [int(r.get_attribute("data-rank")) for r in rows.all()]
    assert ranks == sorted(ranks) and ranks[0] == 1
    assert "q=Which%20country" in page.url

    chosen.locator("button.edit-candidate").click()
    expect(page.locator("#program")).to_have_value(FIRST)
    expect(page.locator("#check-status")).to_contain_text("well-typed")
    _run(page, lambda: page.keyboard.press("Control+Enter"), "Country_062")
    expect(page.locator("#ask")).to_be_enabled()
    expect(page.locator("#cross-check-badge")).to_have_class(re.compile(r"\bagree\b"))
    page.locator('#graph .node[data-step="2"]').click()
    expect(page.locator("#step-items li")).to_have_text(["City_0359"])
    page.evaluate("window.scrollTo(0, 0)")
    _shot(page, "workbench-question.png")
