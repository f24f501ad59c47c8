"""The ontology: schema tables read from Turtle, SHACL shapes that agree with them, and
pyshacl validation of the real KB (passes) and of a deliberately broken one (fails where broken)."""

from __future__ import annotations

import pytest
import rdflib
from rdflib import Literal, URIRef
from rdflib.namespace import RDF, RDFS, SH, SKOS, XSD

import ontology
from ontology import ENTITY_NS, NS, entity_iri, iri, schema, schema_path, shapes_path
from ontology.shacl import validate

SK = rdflib.Namespace(NS)


@pytest.fixture(scope="module")
def schema_graph() -> rdflib.Graph:
    return rdflib.Graph().parse(schema_path(), format="turtle")


@pytest.fixture(scope="module")
def shapes_graph() -> rdflib.Graph:
    return rdflib.Graph().parse(shapes_path(), format="turtle")


# ---- schema tables ----------------------------------------------------------------------------

def test_schema_tables_hold_the_papers_vocabulary():
    s = schema()
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


def test_labels_and_synonyms_people_use_in_questions():
    s = schema()
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


def test_schema_module_reads_the_turtle_not_a_copy(schema_graph):
    """An independent reader (rdflib) finds exactly the module's domains, ranges and labels."""
    s = schema()
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


def test_every_relation_and_attribute_has_an_exactly_once_shape(shapes_graph):
    s = schema()
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


def test_scale1_kb_conforms(kb_graph):
    report = validate(kb_graph)
    assert report.conforms, report.summary()
    assert report.violations == ()


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
