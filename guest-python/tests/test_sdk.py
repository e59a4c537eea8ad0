"""The Python SDK natively: RFC 8785 vectors shared with the Rust and JS SDKs, resourceVersion
ordering, Argo's stale-copy rules, SWF digests. Run: python3 -m unittest discover guest-python/tests
"""

import json
import pathlib
import sys
import unittest
from types import SimpleNamespace

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "guest-python"))

from pipewarden import canonical, rv  # noqa: E402
from pipewarden.eligibility import argo_exit_eligibility  # noqa: E402
from pipewarden.swf import Swf, normalized_spec, render_digest  # noqa: E402
from pipewarden.workflow import exit_handler_of  # noqa: E402


class CanonicalJson(unittest.TestCase):
    def test_the_shared_rfc_8785_vectors(self):
        vectors = json.loads((ROOT / "tests/data/jcs/vectors.json").read_text())["vectors"]
        self.assertGreaterEqual(len(vectors), 5)
        for vector in vectors:
            with self.subTest(vector["name"]):
                text = canonical.canonical_json(json.loads(vector["input"]))
                self.assertEqual(text, vector["canonical"])
                self.assertEqual(canonical.sha256_hex(text.encode()), vector["sha256"])

    def test_numbers_outside_json_are_refused(self):
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                canonical.canonical_json([bad])

    def test_render_settings_digest_ignores_notify_and_formatting(self):
        base = '{"driver": {"image": "a:1"}}'
        self.assertEqual(canonical.render_settings_digest(base),
                         canonical.render_settings_digest('{"notify":"all","driver":{"image":"a:1"}}'))
        self.assertNotEqual(canonical.render_settings_digest(base),
                            canonical.render_settings_digest(base.replace("a:1", "a:2")))


class ResourceVersions(unittest.TestCase):
    def test_order_as_numbers_of_any_length(self):
        self.assertEqual(rv.compare("99", "100"), -1)
        self.assertEqual(rv.compare("18446744073709551616", "18446744073709551615"), 1)
        self.assertEqual(rv.compare("110", "110"), 0)

    def test_non_canonical_values_are_unordered(self):
        for bad in ("", "0", "007", "-5", "+5", "12a", " 12", "1.5", "１２"):
            self.assertIsNone(rv.compare(bad, "1"), bad)


def event(rv_, phase="Running"):
    return SimpleNamespace(resource_version=rv_, phase=phase)


def tombstone(rv_, completed, phase="Succeeded"):
    return SimpleNamespace(resource_version=rv_, completed=completed, phase=phase)


class Eligibility(unittest.TestCase):
    def test_the_table(self):
        rows = [
            (event("100"), None, False, "process"),
            (event("105"), tombstone("110", True), False, "reject-stale"),
            (event("110"), tombstone("110", True), False, "reject-stale"),
            (event("101"), tombstone("105", False), False, "requeue"),
            (event("105"), tombstone("105", False), False, "process"),
            (event("0105"), tombstone("110", True), False, "reject-stale"),
            (event("abc"), tombstone("110", False), False, "process"),
            (event("106"), tombstone("105", False), True, "skip"),
            (event("112", "Succeeded"), tombstone("111", True), True, "process"),
            (event("101", "Succeeded"), tombstone("105", False), True, "skip"),
        ]
        for ev, tomb, deleted, want in rows:
            with self.subTest(rv=ev.resource_version, deleted=deleted):
                self.assertEqual(argo_exit_eligibility(ev, tomb, deleted)[0], want)


class Swfs(unittest.TestCase):
    def test_parameter_order_and_workflow_form_do_not_change_the_digest(self):
        workflow = {"kind": "Workflow", "spec": {"entrypoint": "main"}}
        one = {"workflow": {"spec": json.dumps(workflow),
                            "parameters": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}}
        two = {"workflow": {"spec": workflow,
                            "parameters": [{"name": "b", "value": "2"}, {"name": "a", "value": "1"}]}}
        self.assertEqual(render_digest(one), render_digest(two))
        self.assertIsInstance(normalized_spec(one)["workflow"]["parameters"], dict)

    def test_a_corrupted_embedded_workflow_is_an_error(self):
        swf = Swf({"spec": {"workflow": {"spec": {"dynamicKey1": "dynamicValue1"}}}})
        with self.assertRaisesRegex(ValueError, "holds no Argo Workflow"):
            swf.embedded_workflow()

    def test_exit_handlers(self):
        self.assertIsNone(exit_handler_of('{"spec": {"entrypoint": "main"}}'))
        self.assertEqual(exit_handler_of('{"spec": {"onExit": "bye"}}'), "spec.onExit")
        stored = '{"spec": {}, "status": {"storedWorkflowTemplateSpec": {"hooks": {"exit": {"template": "x"}}}}}'
        self.assertEqual(exit_handler_of(stored), "storedWorkflowTemplateSpec.hooks.exit")


if __name__ == "__main__":
    unittest.main()
