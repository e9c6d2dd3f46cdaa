"""The Maven build of the jobs' Java (flink-jobs/pom.xml) takes every job's Java where it lives: each
`flink-jobs/<job>/java/` folder is a source folder of the build, each `java-test/` a test folder, each
META-INF a resource folder; a job folder left out would build a jar without its functions, or skip its tests,
without a word. Flink is the version PyFlink ships. Read from the files, without Maven."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from tests.support import ROOT

JOBS = ROOT / "flink-jobs"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


@pytest.fixture(scope="module")
def pom() -> ElementTree.Element:
    return ElementTree.parse(JOBS / "pom.xml").getroot()


def folders(pom: ElementTree.Element, goal: str) -> set[str]:
    return {
        source.text
        for execution in pom.iterfind(".//m:plugin/m:executions/m:execution", NS)
        if execution.findtext("m:goals/m:goal", namespaces=NS) == goal
        for source in execution.iterfind("m:configuration/m:sources/m:source", NS)
    }


def test_every_job_s_java_is_a_source_folder_of_the_build(pom):
    java = {str(p.relative_to(JOBS)) for p in JOBS.glob("*/java") if p.is_dir()}
    assert java and folders(pom, "add-source") == java


def test_every_job_s_java_tests_are_a_test_folder_of_the_build(pom):
    tests = {str(p.relative_to(JOBS)) for p in JOBS.glob("*/java-test") if p.is_dir()}
    assert tests and folders(pom, "add-test-source") == tests
    assert all(any(p.glob("**/*Test.java")) for p in JOBS.glob("*/java-test")), "surefire runs *Test classes"


def test_every_service_file_goes_into_the_jar(pom):
    resources = {r.findtext("m:directory", namespaces=NS) for r in pom.iterfind(".//m:resources/m:resource", NS)}
    services = {str(p.parent.parent.parent.relative_to(JOBS)) for p in JOBS.glob("*/java/META-INF/services/*")}
    assert services and services <= resources


def test_flink_is_the_version_pyflink_ships(pom):
    from pyflink.version import __version__

    assert pom.findtext("m:properties/m:flink.version", namespaces=NS) == __version__
    scopes = {
        d.findtext("m:artifactId", namespaces=NS): d.findtext("m:scope", namespaces=NS)
        for d in pom.iterfind("m:dependencies/m:dependency", NS)
        if d.findtext("m:groupId", namespaces=NS) == "org.apache.flink"
    }
    assert scopes and set(scopes.values()) == {"provided"}, scopes
