"""The ontology: schema tables read from Turtle, SHACL shapes that agree with them, and
pyshacl validation of the real KB (passes) and of a deliberately broken one (fails where broken)."""

from __future__ import annotations

import pytest
import rdflib
from rdflib import Literal, URIRef
from rdflib.namespace import RDF, RDFS, SH, SKOS, XSD

import ontology
from ontology import ENTITY_NS, NS, Schema, entity_iri, iri, schema_path, shapes_path
from ontology.errors import ConfigError
from ontology.shacl import validate

SK = rdflib.Namespace(NS)


@pytest.fixture(scope="module")
def vocabulary() -> Schema:
    """The SynKQA-Pro vocabulary alone (schema.ttl, no data)."""
    return Schema.from_turtle(schema_path())


@pytest.fixture(scope="module")
def schema_graph() -> rdflib.Graph:
    return rdflib.Graph().parse(schema_path(), format="turtle")


@pytest.fixture(scope="module")
def shapes_graph() -> rdflib.Graph:
    return rdflib.Graph().parse(shapes_path(), format="turtle")


# ---- schema tables ----------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["vocabulary", "kb_schema"])
def test_schema_tables_hold_the_papers_vocabulary(which, request):
    s = request.getfixturevalue(which)
    assert set(s.classes) == {"Person", "City", "Country", "Organization"}
    assert {(r.name, r.domain, r.range) for r in s.relations.values()} == {
        ("born_in", "Person", "City"), ("works_at", "Person", "Organization"),
        ("headquarters_in", "Organization", "City"), ("located_in", "City", "Country")}
    assert {(a.name, a.domain, a.datatype) for a in s.attributes.values()} == {
        ("birth_year", "Person", "integer"), ("height_cm", "Person", "integer"),
        ("population", "City", "integer"), ("area_km2", "City", "decimal"),
        ("revenue_billion_usd", "Organization", "decimal"), ("founded_year", "Organization", "integer"),
        ("gdp_billion_usd", "Country", "decimal")}
    assert all(r.functional for r in s.relations.values())
    assert all(a.functional for a in s.attributes.values())
    assert all(a.numeric and a.value_type == "number" for a in s.attributes.values())
    assert {i.iri for t in (s.classes, s.relations, s.attributes) for i in t.values()} == \
        {iri(n) for n in (*s.classes, *s.relations, *s.attributes)}


def test_kb_schema_knows_every_entity_and_every_fact_is_total(kb_schema):
    assert kb_schema.stats() == {"classes": 4, "relations": 4, "attributes": 7, "entities": 8120}
    assert {c: len(kb_schema.members(c)) for c in kb_schema.classes} == {
        "Person": 6000, "City": 1200, "Country": 120, "Organization": 800}
    assert all(r.total for r in kb_schema.relations.values())
    assert all(a.total for a in kb_schema.attributes.values())
    assert kb_schema.entity_classes("Org_0012") == {"Organization"}
    assert kb_schema.entity_iri("Person_00371") == entity_iri("Person_00371")
    assert kb_schema.resolve("Person_00371") == ("Person_00371",) and kb_schema.resolve("Nobody") == ()
    assert kb_schema.label("City_0736") == "City_0736"      # labels equal names in this KB
    assert kb_schema.prefix_lines() == f"PREFIX sk: <{NS}>\nPREFIX ske: <{ENTITY_NS}>\n"


def test_labels_and_synonyms_people_use_in_questions(vocabulary):
    s = vocabulary
    assert s.relations["born_in"].label == "born in"
    assert {"birthplace", "hometown"} <= set(s.relations["born_in"].alt_labels)
    assert {"employer", "works for"} <= set(s.relations["works_at"].alt_labels)
    assert "head office" in s.relations["headquarters_in"].alt_labels
    assert "nation" in s.classes["Country"].alt_labels
    assert "inhabitants" in s.attributes["population"].alt_labels
    assert s.words("population")[0] == "population"
    assert "inhabitants" in s.words("population")
    with pytest.raises(KeyError):
        s.words("no_such_name")


def test_schema_module_reads_the_turtle_not_a_copy(schema_graph, vocabulary):
    """An independent reader (rdflib) finds exactly the module's domains, ranges and labels."""
    s = vocabulary
    for table in (s.relations, s.attributes):
        for name, info in table.items():
            node = SK[name]
            assert schema_graph.value(node, RDFS.domain) == SK[info.domain]
            assert str(schema_graph.value(node, RDFS.label)) == info.label
            assert tuple(sorted(str(o) for o in schema_graph.objects(node, SKOS.altLabel))) == info.alt_labels
    for name, info in s.relations.items():
        assert schema_graph.value(SK[name], RDFS.range) == SK[info.range]
    for name, info in s.attributes.items():
        assert schema_graph.value(SK[name], RDFS.range) == XSD[info.datatype]
    declared = {str(c)[len(NS):] for c in schema_graph.subjects(RDF.type, rdflib.OWL.Class)}
    assert declared == set(s.classes)


def test_iris():
    assert iri("born_in") == "http://synkqa.org/ontology#born_in"
    assert entity_iri("Person_00371") == "http://synkqa.org/entity/Person_00371"
    assert ontology.PREFIXES["sk"] == NS and ontology.PREFIXES["ske"] == ENTITY_NS
    assert shapes_path().is_file() and schema_path().is_file()


# ---- shapes agree with the schema -------------------------------------------------------------

def _property_shapes(shapes: rdflib.Graph, cls: str) -> dict[str, rdflib.term.Node]:
    [node_shape] = list(shapes.subjects(SH.targetClass, SK[cls]))
    return {str(shapes.value(p, SH.path)): p for p in shapes.objects(node_shape, SH.property)}


def test_every_relation_and_attribute_has_an_exactly_once_shape(shapes_graph, vocabulary):
    s = vocabulary
    for name, rel in s.relations.items():
        prop = _property_shapes(shapes_graph, rel.domain)[NS + name]
        assert shapes_graph.value(prop, SH.minCount).toPython() == 1
        assert shapes_graph.value(prop, SH.maxCount).toPython() == 1
        assert shapes_graph.value(prop, SH["class"]) == SK[rel.range]
    for name, attr in s.attributes.items():
        prop = _property_shapes(shapes_graph, attr.domain)[NS + name]
        assert shapes_graph.value(prop, SH.minCount).toPython() == 1
        assert shapes_graph.value(prop, SH.maxCount).toPython() == 1
        assert shapes_graph.value(prop, SH.datatype) == XSD[attr.datatype]
    for cls in s.classes:  # closed shapes: a class has no property the schema does not give it
        own = {NS + n for n, r in s.relations.items() if r.domain == cls}
        own |= {NS + n for n, a in s.attributes.items() if a.domain == cls}
        assert set(_property_shapes(shapes_graph, cls)) == own | {str(RDFS.label)}


# ---- SHACL on the real KB ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def kb_graph(kb_turtle) -> rdflib.Graph:
    return rdflib.Graph().parse(kb_turtle, format="turtle")


@pytest.mark.slow
def test_scale1_kb_conforms(kb_graph):
    report = validate(kb_graph)
    assert report.conforms, report.summary()
    assert report.violations == ()


@pytest.mark.slow
def test_broken_kb_fails_on_exactly_the_broken_nodes(kb_turtle):
    graph = rdflib.Graph().parse(kb_turtle, format="turtle")

    def e(name):
        return URIRef(ENTITY_NS + name)

    # missing born_in
    graph.remove((e("Person_00371"), SK.born_in, None))
    # duplicate located_in (a second country)
    [country] = graph.objects(e("City_0736"), SK.located_in)
    other = e("Country_000") if country != e("Country_000") else e("Country_001")
    graph.add((e("City_0736"), SK.located_in, other))
    # string-typed population
    graph.remove((e("City_0001"), SK.population, None))
    graph.add((e("City_0001"), SK.population, Literal("12345")))
    # an attribute on the wrong class (closed shape)
    graph.add((e("Org_0007"), SK.birth_year, Literal(1990)))
    # an untyped, unlabelled entity at the end of an edge
    graph.add((e("Person_00001"), SK.works_at, e("Ghost_1")))

    report = validate(graph)
    assert not report.conforms
    assert report.focus_nodes() == {ENTITY_NS + n for n in
                                    ("Person_00371", "City_0736", "City_0001", "Org_0007",
                                     "Person_00001", "Ghost_1")}
    by_focus = {}
    for v in report.violations:
        by_focus.setdefault(v.focus[len(ENTITY_NS):], set()).add((v.path, v.constraint))
    assert (NS + "born_in", "MinCountConstraintComponent") in by_focus["Person_00371"]
    assert (NS + "located_in", "MaxCountConstraintComponent") in by_focus["City_0736"]
    assert (NS + "population", "DatatypeConstraintComponent") in by_focus["City_0001"]
    assert any(c == "ClosedConstraintComponent" for _, c in by_focus["Org_0007"])
    # two works_at on Person_00001, the second to something that is no Organization
    assert (NS + "works_at", "MaxCountConstraintComponent") in by_focus["Person_00001"]
    assert (NS + "works_at", "ClassConstraintComponent") in by_focus["Person_00001"]
    assert (str(RDF.type), "MinCountConstraintComponent") in by_focus["Ghost_1"]
    assert "born in exactly one City" in report.summary(50)


# ---- Schema read from any KB's RDF --------------------------------------------------------------

_PEOPLE = """
@prefix ex: <http://example.org/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Agent a owl:Class .
ex:Person a owl:Class ; rdfs:subClassOf ex:Agent ; rdfs:label "human" ; skos:altLabel "individual" .
ex:Student rdfs:subClassOf ex:Person .
ex:Employee rdfs:subClassOf ex:Person .
ex:Org rdfs:subClassOf ex:Agent .
ex:City a owl:Class ; skos:notation "town" .
ex:ada a ex:Student, ex:Employee ; rdfs:label "Ada Lovelace" ; ex:knows ex:bob, ex:cyd ;
    ex:lives_in ex:paris ; ex:height 170 ; ex:nick "A" .
ex:bob a ex:Person ; rdfs:label "Bob" ; ex:knows ex:ada ; ex:lives_in ex:paris ; ex:height 180.5 .
ex:cyd a ex:Person ; rdfs:label "Bob" ; ex:lives_in ex:paris .
ex:acme a ex:Org ; rdfs:label "acme" ; ex:employs ex:bob .
ex:paris a ex:City ; ex:founded "0300"^^xsd:gYear .
"""


@pytest.fixture(scope="module")
def people() -> Schema:
    return Schema.from_turtle_text(_PEOPLE)


def test_small_schema_classes_and_subclasses(people):
    assert set(people.classes) == {"Agent", "Person", "Student", "Employee", "Org", "City"}
    assert people.classes["Student"].parents == ("Person",)         # subClassOf alone makes a class
    assert people.classes["Person"].parents == ("Agent",)
    assert people.ancestors("Student") == {"Student", "Person", "Agent"}
    assert people.ancestors("City") == {"City"}
    assert people.members("Person") == ["ada", "bob", "cyd"]        # subclasses included
    assert people.members("Agent") == ["acme", "ada", "bob", "cyd"]
    assert people.members("Student") == ["ada"]
    assert people.overlaps(frozenset({"Person"}), "Student") and people.overlaps(frozenset({"Student"}), "Agent")
    assert not people.overlaps(frozenset({"Org"}), "Person")
    assert people.common(frozenset({"Person"}), frozenset({"Student", "City"})) == {"Student"}
    # Labels, altLabels and SPARQL variable names of classes.
    assert people.words("Person") == ("human", "individual")
    assert people.classes["Student"].label == "Student"
    assert people.classes["Person"].variable == "person" and people.classes["City"].variable == "town"


def test_small_schema_entities_with_several_types(people):
    assert people.entity_classes("ada") == {"Student", "Employee"}
    assert people.entity_classes("bob") == {"Person"}
    assert people.entity_classes("nobody") is None
    assert people.entity_names() == ["acme", "ada", "bob", "cyd", "paris"]
    assert people.entity_iri("ada") == "http://example.org/ada"
    # A plain name the KB lacks goes to the entities' namespace (the engines report it
    # unknown); text that cannot be an IRI's local name gets no IRI at all.
    assert people.entity_iri("nobody") == "http://example.org/nobody"
    assert people.entity_iri("no body") is None and people.entity_iri("a> <b") is None
    assert people.entity_name("http://example.org/ada") == "ada"


def test_small_schema_relations_inferred_from_the_data(people):
    """No property is declared: relations are the predicates with IRI objects; domain and
    range are the most specific class every subject/object belongs to."""
    assert set(people.relations) == {"knows", "lives_in", "employs"}
    knows = people.relations["knows"]
    # ada knows two people: multi-valued, so not functional; cyd knows nobody: not total.
    assert (knows.domain, knows.range, knows.functional, knows.total) == ("Person", "Person", False, False)
    assert knows.iri == "http://example.org/knows" and knows.label == "knows"
    lives_in = people.relations["lives_in"]
    # Every Person (students and employees included) lives in exactly one place.
    assert (lives_in.domain, lives_in.range, lives_in.functional, lives_in.total) == (
        "Person", "City", True, True)
    assert people.relations["lives_in"].label == "lives in"
    employs = people.relations["employs"]
    assert (employs.domain, employs.range, employs.functional, employs.total) == ("Org", "Person", True, True)


def test_small_schema_attributes_and_value_types(people):
    assert set(people.attributes) == {"height", "nick", "founded"}
    height = people.attributes["height"]
    # integer and decimal literals: compared as decimals; cyd has no height: not total.
    assert (height.domain, height.datatype, height.value_type, height.numeric) == ("Person", "decimal", "number", True)
    assert height.functional and not height.total
    nick = people.attributes["nick"]
    assert (nick.datatype, nick.value_type, nick.numeric) == ("string", "string", False)
    founded = people.attributes["founded"]
    assert (founded.domain, founded.datatype, founded.value_type, founded.total) == ("City", "gYear", "year", True)


def test_small_schema_labels_are_not_ids(people):
    assert people.label("ada") == "Ada Lovelace"
    assert people.label("paris") == "paris"          # no label: the name
    assert people.label("acme") == "acme"            # a label equal to the name
    assert people.resolve("Ada Lovelace") == ("ada",)
    assert people.resolve("ada") == ("ada",)           # the name still works
    assert people.resolve("ada lovelace") == ()        # labels match exactly
    assert people.entity_labels == {"ada": "Ada Lovelace", "bob": "Bob", "cyd": "Bob"}


def test_small_schema_ambiguous_label_names_two_entities(people):
    assert people.resolve("Bob") == ("bob", "cyd")
    assert people.resolve("bob") == ("bob",)            # a name wins over labels


def test_small_schema_declared_ontology_wins_over_inference():
    schema = Schema.from_turtle_text(_PEOPLE + """
ex:knows a owl:ObjectProperty, owl:FunctionalProperty ; rdfs:domain ex:Agent ; rdfs:range ex:Agent .
ex:height a owl:DatatypeProperty ; rdfs:range xsd:integer .
""")
    knows = schema.relations["knows"]
    assert (knows.domain, knows.range, knows.functional) == ("Agent", "Agent", True)
    assert not knows.total                                  # acme and cyd know nobody
    assert schema.attributes["height"].datatype == "integer"


def test_small_schema_prefixes():
    schema = Schema.from_turtle_text(_PEOPLE)
    assert schema.prefix_lines() == "PREFIX ex: <http://example.org/>\n"
    assert schema.term("http://example.org/knows") == "ex:knows"
    assert schema.term("http://example.org/a%20b") == "<http://example.org/a%20b>"
    undeclared = Schema.from_turtle_text(
        "<http://a.org/x> a <http://b.org/T> ; <http://b.org/p> <http://a.org/y> .")
    # Undeclared namespaces get ns1, ns2, ...; queries declare the vocabulary's, then the entities'.
    assert undeclared.prefixes == {"ns1": "http://a.org/", "ns2": "http://b.org/"}
    assert undeclared.prefix_lines() == "PREFIX ns2: <http://b.org/>\nPREFIX ns1: <http://a.org/>\n"
    assert undeclared.term("http://b.org/p") == "ns2:p" and undeclared.term("http://a.org/x") == "ns1:x"


def test_two_entities_with_one_local_name_are_a_config_error():
    with pytest.raises(ConfigError, match="two entities share the local name 'ada'"):
        Schema.from_turtle_text("""@prefix ex: <http://example.org/> .
ex:ada a ex:Person . <http://other.org/ada> a ex:Person .""")
    with pytest.raises(ConfigError, match="two entities share the local name 'ada'"):
        Schema.from_turtle_text("""@prefix ex: <http://example.org/> .
ex:ada a ex:Person ; ex:knows <http://other.org/ada> .""")     # an object of a relation too


def test_predicate_with_iri_and_literal_objects():
    text = """@prefix ex: <http://example.org/> .
ex:ada a ex:Person ; ex:likes ex:bob, "cheese" . ex:bob a ex:Person ."""
    with pytest.raises(ConfigError, match="<http://example.org/likes> has both IRIs and literals"):
        Schema.from_turtle_text(text)
    # Declared, it is what the ontology says.
    declared = Schema.from_turtle_text(text + "\nex:likes a <http://www.w3.org/2002/07/owl#ObjectProperty> .")
    assert set(declared.relations) == {"likes"} and not declared.attributes
    assert declared.relations["likes"].range == "Person"


def test_schema_readers_agree(tmp_path):
    import pyoxigraph as ox
    path = tmp_path / "people.ttl"
    path.write_text(_PEOPLE)
    from_text = Schema.from_turtle_text(_PEOPLE)
    from_file = Schema.from_turtle(path)
    from_rdf = Schema.from_rdf(ox.parse(input=_PEOPLE.encode(), format=ox.RdfFormat.TURTLE))
    for s in (from_file, from_rdf):
        assert s.classes == from_text.classes and s.relations == from_text.relations
        assert s.attributes == from_text.attributes and s.entity_types == from_text.entity_types
        assert s.entity_labels == from_text.entity_labels
    with pytest.raises(ConfigError, match="not found"):
        Schema.from_turtle(tmp_path / "nope.ttl")
    with pytest.raises(ConfigError, match="not valid Turtle"):
        Schema.from_turtle_text("this is not turtle")


def test_a_declared_relations_stray_literal_does_not_make_it_non_functional():
    from ontology import Schema
    schema = Schema.from_turtle_text("""
        @prefix ex: <http://example.org/> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
        ex:r a owl:ObjectProperty .
        ex:a a ex:T ; ex:r ex:b, "a note" .
        ex:b a ex:T ; ex:r ex:a, ex:c .
        ex:c a ex:T .""")
    assert not schema.relations["r"].functional            # ex:b has two IRI values
    one = Schema.from_turtle_text("""
        @prefix ex: <http://example.org/> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
        ex:r a owl:ObjectProperty .
        ex:a a ex:T ; ex:r ex:b, "a note" .
        ex:b a ex:T .""")
    assert one.relations["r"].functional                    # one IRI value each; the literal is not one
